/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A failed step of the attach in the operator's terms: the message says what was found, the
 * hint the next step, and both depend on what the target shows (its environment, its TMPDIR,
 * who owns its socket) and on who we are. attach.c decides that a step failed and its outcome;
 * the words are here. Strings of the target are rendered (render.h) before they are shown.
 */
#ifndef CLRATTACH_ATTACH_EXPLAIN_H
#define CLRATTACH_ATTACH_EXPLAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "flow/outcome.h"

struct diag_socket;
struct target;

/* The socket diag_socket_find() chose, when it is absent, its directory cannot be listed or it
 * is not a socket. Returns 0 for a usable socket; else the step's negative code with e filled
 * and *ret the outcome it means. */
int attach_explain_socket(const struct target *t, const struct diag_socket *s,
                          enum attach_outcome *ret, struct cla_error *e);

/* ECONNREFUSED on the socket `name`: nothing listens on it. */
void attach_explain_stale(const struct target *t, const char *name, struct cla_error *e);

/* EACCES on connecting to the socket `name`, held as `sockfd`: names the socket's real owner. */
void attach_explain_socket_owner(int sockfd, const struct target *t, const char *name,
                                 struct cla_error *e);

/* An environ target_open() could not read (t->environ_errno): which right is missing. */
void attach_explain_environ(const struct target *t, struct cla_error *e);

/* The app died after the request was sent and before the runtime answered, `after_ms` later. */
void attach_explain_died(int64_t after_ms, struct cla_error *e);

/* Is the runtime configured to pause at startup until a ResumeRuntime (its environment:
 * DefaultDiagnosticPortSuspend=1, or a DiagnosticPorts entry without ",nosuspend")? */
bool attach_explain_suspend_configured(const struct target *t);

/* --startup: resumed, but `path` never showed in the maps within `waited_ms`. */
void attach_explain_startup_unmapped(const char *path, int64_t waited_ms, struct cla_error *e);

/* The runtime's answer `hr` other than success, or an app that died after answering
 * (res->died): what it means, and, for already_active, who holds the slot (res->holder,
 * res->profiler_env) and what stayed behind (res->mapped). `startup`: --startup was given. */
void attach_explain_answer(const struct target *t, uint32_t hr, bool startup,
                           const struct attach_result *res, struct cla_error *e);

#endif
