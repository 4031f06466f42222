# A test profiler shaped like vendor ones (tests/vendorprof/vendorprof.c): a directory holding the
# entry library, a helper it needs through RUNPATH $ORIGIN/lib, and a config it finds beside
# itself. `make vendorprof` lays it out in $(BUILD)/vendorprof/ as a profiler directory. Like the
# C++ profilers vendors ship, it needs the C++ runtime (libstdc++.so.6) through DT_NEEDED, which
# the app has loaded already (libcoreclr needs it too); --no-as-needed keeps the entry although
# the C code calls none of it.
VENDORPROF_DIR := $(BUILD)/vendorprof
VENDORPROF_FLAGS := $(PROF_CFLAGS) -fPIC -shared -fvisibility=hidden -Wl,-z,defs -Wl,-z,now \
                    -Wl,-z,relro

# The startup-only variant (-DVENDOR_INERT), named and identified as OpenTelemetry's profiler so
# that attach's table of known no-op profilers (lib/profset/vendors.c) names it.
VENDORINERT_DIR := $(BUILD)/vendorinert
VENDORINERT_LIB := $(VENDORINERT_DIR)/OpenTelemetry.AutoInstrumentation.Native.so

# The same startup-only library as a home in OpenTelemetry's release layout: the native profiler
# in its RID folder (with the files it finds beside itself) next to net/ (the managed half) and
# LICENSE, delivered whole (docs/bundles.md, "Vendor homes"). There is no musl build of the test
# profiler, so linux-x64/ is the only RID folder.
VENDORHOME_DIR := $(BUILD)/vendorhome
VENDORHOME_RID := $(VENDORHOME_DIR)/linux-x64
VENDORHOME_FILES := $(VENDORHOME_RID)/$(notdir $(VENDORINERT_LIB)) $(VENDORHOME_RID)/vendor.conf \
                    $(VENDORHOME_RID)/lib/libvendorhelper.so \
                    $(VENDORHOME_DIR)/net/OpenTelemetry.AutoInstrumentation.dll \
                    $(VENDORHOME_DIR)/LICENSE

.PHONY: vendorprof vendorhome
vendorprof: $(VENDORPROF_DIR)/libvendorprof.so $(VENDORPROF_DIR)/vendor.conf $(VENDORINERT_LIB) \
            $(VENDORINERT_DIR)/vendor.conf $(VENDORINERT_DIR)/lib/libvendorhelper.so vendorhome
vendorhome: $(VENDORHOME_FILES)

$(VENDORHOME_RID)/%: $(VENDORINERT_DIR)/%
	@mkdir -p $(dir $@)
	cp $< $@

$(VENDORHOME_DIR)/net/OpenTelemetry.AutoInstrumentation.dll:
	@mkdir -p $(dir $@)
	echo 'the managed half (a stand-in)' >$@

$(VENDORHOME_DIR)/LICENSE:
	@mkdir -p $(dir $@)
	echo 'Apache-2.0 (a stand-in for the vendor licence)' >$@

$(VENDORPROF_DIR)/lib/libvendorhelper.so: tests/vendorprof/vendorhelper.c \
                                          tests/vendorprof/vendorhelper.h
	@mkdir -p $(dir $@)
	$(CC) $(VENDORPROF_FLAGS) -Wl,-soname,libvendorhelper.so -o $@ $<

$(VENDORPROF_DIR)/libvendorprof.so: tests/vendorprof/vendorprof.c tests/vendorprof/vendorhelper.h \
                                    profiler/corprof.h profiler/com.h \
                                    $(VENDORPROF_DIR)/lib/libvendorhelper.so
	$(CC) $(VENDORPROF_FLAGS) -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/lib' -o $@ $< \
	    -L$(VENDORPROF_DIR)/lib -lvendorhelper -ldl -lpthread -Wl,--no-as-needed -lstdc++ \
	    -Wl,--as-needed

$(VENDORPROF_DIR)/vendor.conf: tests/vendorprof/vendor.conf
	@mkdir -p $(dir $@)
	cp $< $@

$(VENDORINERT_DIR)/lib/libvendorhelper.so: $(VENDORPROF_DIR)/lib/libvendorhelper.so
	@mkdir -p $(dir $@)
	cp $< $@

$(VENDORINERT_LIB): tests/vendorprof/vendorprof.c tests/vendorprof/vendorhelper.h \
                    profiler/corprof.h profiler/com.h $(VENDORINERT_DIR)/lib/libvendorhelper.so
	$(CC) $(VENDORPROF_FLAGS) -DVENDOR_INERT -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN/lib' \
	    -o $@ $< -L$(VENDORINERT_DIR)/lib -lvendorhelper -ldl -lpthread

$(VENDORINERT_DIR)/vendor.conf: tests/vendorprof/vendor.conf
	@mkdir -p $(dir $@)
	cp $< $@
