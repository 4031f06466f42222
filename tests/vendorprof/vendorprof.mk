# A test profiler shaped like vendor ones (tests/vendorprof/vendorprof.c): a directory holding the
# entry library, a helper it needs through RUNPATH $ORIGIN/lib, and a config it finds beside
# itself. `make vendorprof` lays it out in $(BUILD)/vendorprof/ as a profiler directory. Like the
# C++ profilers vendors ship, it needs the C++ runtime (libstdc++.so.6) through DT_NEEDED, which
# the app has loaded already (libcoreclr needs it too); --no-as-needed keeps the entry although
# the C code calls none of it.
VENDORPROF_DIR := $(BUILD)/vendorprof
VENDORPROF_FLAGS := $(PROF_CFLAGS) -fPIC -shared -fvisibility=hidden -Wl,-z,defs -Wl,-z,now \
                    -Wl,-z,relro

.PHONY: vendorprof
vendorprof: $(VENDORPROF_DIR)/libvendorprof.so $(VENDORPROF_DIR)/vendor.conf

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
