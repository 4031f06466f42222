/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `clrattach otel`: the OpenTelemetry agent (profiler/otel-agent) started or stopped in a running
 * app: checked against the app first (runtime, an SDK of its own, the agent already running),
 * then run as a startup hook with its settings, and its status file read back. Nothing prints.
 */
#ifndef CLRATTACH_OTEL_H
#define CLRATTACH_OTEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "flow/attempt.h"

struct target;

/* The oldest runtime the agent starts on: OpenTelemetry 1.20 references
 * System.Diagnostics.DiagnosticSource 10.0.0.0 (docs/otel.md). */
#define OTEL_MIN_MAJOR 10

struct otel_opts {
    int proc_dirfd;           /* our /proc */
    const char *agent;        /* on our side: the agent's directory */
    bool stop;                /* --stop: flush and shut its providers down */
    const char *endpoint;     /* start: OTEL_EXPORTER_OTLP_ENDPOINT (otel_endpoint_check()ed) */
    const char *protocol;     /* NULL: http/protobuf */
    const char *service_name; /* NULL: the agent's default, the entry assembly's name */
    const char *resource_attributes; /* "k=v,..." or NULL */
    /* k8s.pod.name, k8s.namespace.name, k8s.container.name added to the resource; NULL: none */
    const char *pod_name, *pod_namespace, *container_name;
    bool force; /* start beside an OpenTelemetry SDK of the app's own */
    /* --env: more "NAME=VALUE" (ipc_env_check()ed), sent after the agent's own */
    const char *const *env;
    size_t env_count;
    const char *target_dir; /* NULL: the target's TMPDIR */
    int64_t timeout_ms;
    int (*on_stage)(enum attach_stage stage, void *userdata, struct cla_error *e);
    void *userdata;
    struct attach_stop *stop_signal; /* NULL: none */
};

/* Starts (or with o->stop stops) the agent in the pinned process `t`. Always fills *ret (kind
 * ATTACH_KIND_OTEL_START or _STOP; the agent's status in ret->otel). Refused before anything is
 * sent: a runtime before .NET 10 (runtime_too_old), an OpenTelemetry.dll of the app's own mapped
 * unless force (otel_sdk_present), the agent running already (already_active), a stop where it
 * never ran (otel_failed). Returns 0 when the status says started or stopped, else the negative
 * error. */
int otel_run(const struct otel_opts *o, struct target *t, struct attach_result *ret);

#endif
