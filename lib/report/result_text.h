/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Turning an attach result into what people and Kubernetes read about it: the Event's reason,
 * type and note, and the termination-log message. Pure: no I/O, so every wording is tested.
 */
#ifndef CLRATTACH_RESULT_TEXT_H
#define CLRATTACH_RESULT_TEXT_H

#include <stddef.h>
#include <time.h>

#include "flow/attach.h"
#include "report/k8s_event.h"

/* The termination log's limit: the kubelet reads at most 4096 bytes of it. */
#define RESULT_TEXT_TERMINATION_MAX 4096

struct result_text_event {
    char note[1025];            /* cut to the apiserver's 1024 bytes on a UTF-8 boundary */
    struct k8s_event_spec spec; /* points into note; valid while this struct lives */
};

/* Fills the Event for `r` (reason ProfilerAttached / ProfilerAlreadyActive /
 * ProfilerAttachFailed, type Normal or Warning, action AttachProfiler) at time `when`. */
void result_text_event(const struct attach_result *r, const char *profiler,
                       const struct ipc_guid *clsid, const struct timespec *when,
                       struct result_text_event *ret);

/* Writes the termination-log text: `json` itself when it fits the 4096-byte limit, else a
 * one-line summary with `exit_code` (the process's own) cut on a UTF-8 boundary. Returns the
 * length written into out (which holds RESULT_TEXT_TERMINATION_MAX + 1 bytes). */
size_t result_text_termination(const struct attach_result *r, const char *json, int exit_code,
                               char *out);

#endif
