/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_REPORT_H
#define CLRATTACH_REPORT_H

/*
 * Turning an attach result into what people and Kubernetes read about it: the Event's reason,
 * type and note, and the termination-log message. Pure: no I/O, so every wording is tested.
 */

#include <stddef.h>
#include <time.h>

#include "attach.h"
#include "k8s_event.h"

/* The termination log's limit: the kubelet reads at most 4096 bytes of it. */
#define REPORT_TERMINATION_LOG_MAX 4096

struct report_event {
    char note[1025];            /* cut to the apiserver's 1024 bytes on a UTF-8 boundary */
    struct k8s_event_spec spec; /* points into note; valid while this struct lives */
};

/* Fills the Event for `r` (reason ProfilerAttached / ProfilerAlreadyActive /
 * ProfilerAttachFailed, type Normal or Warning, action AttachProfiler) at time `when`. */
void report_event_from_result(const struct attach_result *r, const char *profiler,
                              const struct ipc_guid *clsid, const struct timespec *when,
                              struct report_event *ret);

/* Writes the termination-log text: `json` itself when it fits the 4096-byte limit, else a
 * one-line summary with `exit_code` (the process's own) cut on a UTF-8 boundary. Returns the
 * length written into out (which holds REPORT_TERMINATION_LOG_MAX + 1 bytes). */
size_t report_termination_message(const struct attach_result *r, const char *json, int exit_code,
                                  char *out);

#endif
