/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What clrattach knows of its OpenTelemetry agent (profiler/otel-agent, docs/otel.md): the
 * settings it is given checked, the app's maps read for it and for an SDK of the app's own, and
 * its status file (JSON the app writes) decoded as untrusted input. Pure: no I/O.
 */
#ifndef CLRATTACH_OTEL_STATUS_H
#define CLRATTACH_OTEL_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bounds.h"
#include "base/err.h"

enum otel_state {
    OTEL_STATE_NONE = 0, /* no status read */
    OTEL_STATE_STARTED,
    OTEL_STATE_STARTING, /* still starting after 5 s: the file is rewritten when it ends */
    OTEL_STATE_STOPPED,
    OTEL_STATE_STOPPING,
    OTEL_STATE_REFUSED,
    OTEL_STATE_FAILED,
};

/* What the status says, every string rendered (base/render.h) and terminated; "" when absent. */
struct otel_status {
    enum otel_state state;
    char action[16];
    char reason[512];
    char next_step[256];
    char instrumentations[256]; /* "http_client,aspnetcore,runtime" */
    char traces[192];
    char metrics[192];
    char exporter[32];
    char protocol[32];
    char endpoint[256];
    char service_name[128];
    char agent_version[32];
    int64_t initialize_ms; /* -1 when absent */
    int64_t stop_ms;       /* -1 when absent */
    int flushed;           /* -1 absent, 0 false, 1 true */
};

/* Decodes the status in buf[0..len) (at most OTEL_STATUS_MAX bytes, a JSON object with a known
 * "state"; every other field optional, a field of the wrong type ignored, lists past
 * OTEL_STATUS_LIST_MAX names cut). Returns 0 with *ret; -E2BIG past the cap, -EPROTO for
 * anything else, *ret untouched then. */
int otel_status_parse(const char *buf, size_t len, struct otel_status *ret, struct cla_error *e);

/* The hook's file name: mapped in an app, the agent is loaded there. */
#define OTEL_AGENT_ENTRY "ClrattachOtelAgent.dll"

/* What an app's maps say: the directory of the agent's mapped hook ("" for none), and the first
 * OpenTelemetry.dll mapped outside every directory of the agent's ("" for none): an SDK of the
 * app's own. */
struct otel_maps {
    char agent_dir[TARGET_PATH_MAX];
    char sdk_path[TARGET_PATH_MAX];
};

/* Scans maps text buf[0..len) (the target's). Always fills *ret; a path that does not fit is
 * skipped. */
void otel_maps_scan(const char *buf, size_t len, struct otel_maps *ret);

/* An OTLP endpoint clrattach passes on: "http://" or "https://", a host, no space, control or
 * quote character, at most 1024 bytes. Returns 0, else -EINVAL with the reason and an
 * example. */
int otel_endpoint_check(const char *url, struct cla_error *e);

/* "http/protobuf" or "grpc": 0, else -EINVAL. */
int otel_protocol_check(const char *p, struct cla_error *e);

/* OTEL_RESOURCE_ATTRIBUTES as the operator gives it: "k=v" pairs joined by ',', each key
 * non-empty, no control character. Returns 0, else -EINVAL naming the pair. */
int otel_attributes_check(const char *s, struct cla_error *e);

/* "started", "stopped", ... for a state; "" for none. */
const char *otel_state_name(enum otel_state s);

#endif
