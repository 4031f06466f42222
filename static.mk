# The static build: `make static` -> build/static/clrattach (musl, libcurl + OpenSSL and jansson
# linked in, all from Debian's sources; build/static/components and clrattach.spdx.json say
# what went in), `make static-test` runs it in an empty root against a real .NET target.
# Included from the top-level Makefile. The script caches the dependencies it builds from
# Debian sources in build/static/deps and only relinks clrattach on later runs.
# `make static ARCH=arm64` (or `make static-arm64`) cross-builds the same for aarch64 into
# build/static-arm64, with the cross compilers scripts/install-deps.sh installs (no emulation).
.PHONY: static static-arm64 static-test

# Always run the script: it knows what is cached, and make cannot see its inputs.
static:
	ARCH=$(ARCH) scripts/build-static.sh

static-arm64:
	ARCH=aarch64 scripts/build-static.sh

static-test: static all target
	BUILD=$(BUILD) tests/deploy/test_static.sh

# The sample profiler built against musl (build/musl/libclrprobe.so), for Alpine-based apps;
# the rule lives with the profiler. The Dockerfile builds it.
-include profiler/musl.mk
