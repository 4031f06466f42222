# Benchmarks (included by the top-level Makefile): `make bench` measures attach latency, peak
# RSS, binary size and `clrattach ps` scaling; see docs/benchmarks.md. BENCH_ITERATIONS=2 is
# enough for CI to check the script still runs; the published numbers use the default.
BENCH_ITERATIONS ?= 15
BENCH_PS_COUNTS  ?= 10 1000 5000

.PHONY: bench
bench: all target
	BUILD=$(BUILD) bench/run.sh --iterations $(BENCH_ITERATIONS) --ps-counts "$(BENCH_PS_COUNTS)"
