/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_STARTUP_H
#define CLRATTACH_STARTUP_H

/*
 * The startup half of an attach (attach --startup): a runtime paused at startup
 * (DOTNET_DefaultDiagnosticPortSuspend=1) gets the --env variables (SetEnvironmentVariable),
 * StartupProfiler and ResumeRuntime, and the load is then looked for in its maps. From the
 * moment such a runtime may be waiting for us, ResumeRuntime is owed on every way out, within
 * --resume-deadline (the resume guarantee). attach.c calls these at its steps.
 */

#include <stdint.h>

#include "flow/attach_internal.h"

/* From here the runtime may be paused at startup waiting for us: ResumeRuntime is owed on every
 * way out, by --resume-deadline, and a stop signal must wait for it (attach_stop). */
void startup_owe_resume(struct attempt *a);

/* Sends the owed ResumeRuntime, once (a no-op when not owed or sent already); fills the
 * result's resumed and resumed_after_ms. */
void startup_resume(struct attempt *a);

/* The deadline of an exchange before the resume: --timeout, and never past --resume-deadline. */
int64_t startup_exchange_deadline(const struct attempt *a);

/* Sends each --env variable (SetEnvironmentVariable). Returns 0 with a->hr: 0 when every one
 * was taken, else the runtime's refusal of the first that was not. */
int startup_send_env(struct attempt *a);

/* --env, then StartupProfiler. Returns 0 with a->hr, the first refusal or 0. */
int startup_load(struct attempt *a);

/* After StartupProfiler and ResumeRuntime: loaded_at_startup when the profiler shows in the
 * maps within the settle time, else startup_load_failed (or the app died). */
int startup_settle(struct attempt *a);

#endif
