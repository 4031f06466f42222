# The Kubernetes reporting test driver and scenario tests (included by the main Makefile).
K8S_DRIVER := $(BUILD)/tests/k8s_driver

$(K8S_DRIVER): tests/k8s/k8s_driver.c $(BUILD)/libclrattach.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libclrattach.a $(LDLIBS_TOOL)

.PHONY: k8s-test
k8s-test: $(K8S_DRIVER)
	K8S_DRIVER=$(K8S_DRIVER) tests/k8s/run.sh
