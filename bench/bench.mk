# Benchmarks (included by the top-level Makefile): `make bench` measures attach latency, peak
# RSS, binary size, `clrattach ps` scaling, Event reporting over TLS, watch mode (detection under
# a hostile flood too: bench/flood.sh) and what a startup load costs the app; see
# docs/benchmarks.md. `make test` runs bench/run.sh on 2
# iterations to check it still runs; the published numbers use these defaults.
BENCH_ITERATIONS ?= 15
BENCH_PS_COUNTS  ?= 100 1000 5000
BENCH_EVENT_REPORTS ?= 10
BENCH_WATCH_SECONDS ?= 60
BENCH_WATCH_COUNTS ?= 10 1000
BENCH_STARTUP_RUNS ?= 20

.PHONY: bench
bench: all target static $(K8S_DRIVER)
	BUILD=$(BUILD) K8S_DRIVER=$(K8S_DRIVER) bench/run.sh --iterations $(BENCH_ITERATIONS) \
	    --ps-counts "$(BENCH_PS_COUNTS)" --event-reports $(BENCH_EVENT_REPORTS) \
	    --watch-seconds $(BENCH_WATCH_SECONDS) --watch-counts "$(BENCH_WATCH_COUNTS)" \
	    --startup-runs $(BENCH_STARTUP_RUNS)

# `clrattach otel`: command to first span, the agent's cost in latency and RSS (bench/otel.sh).
BENCH_OTEL_RUNS ?= 5
BENCH_OTEL_REQUESTS ?= 2000
.PHONY: bench-otel
bench-otel: all otel-agent otel-apps
	BUILD=$(BUILD) bench/otel.sh --runs $(BENCH_OTEL_RUNS) --requests $(BENCH_OTEL_REQUESTS)

# `clrattach agent`: annotation to attach p50/p95, idle CPU and RSS with 100 pods' processes,
# against the real kube-apiserver of tests/apiserver (bench/agent.sh; docs/benchmarks.md).
BENCH_AGENT_PODS ?= 20
BENCH_AGENT_IDLE_PODS ?= 100
BENCH_AGENT_IDLE_SECONDS ?= 60
.PHONY: bench-agent
bench-agent: all target static
	BUILD=$(BUILD) bench/agent.sh --pods $(BENCH_AGENT_PODS) --idle-pods $(BENCH_AGENT_IDLE_PODS) \
	    --idle-seconds $(BENCH_AGENT_IDLE_SECONDS)
