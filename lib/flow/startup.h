/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The startup half of an attach (attach --startup): a runtime paused at startup
 * (DOTNET_DefaultDiagnosticPortSuspend=1) gets the --env variables (SetEnvironmentVariable),
 * StartupProfiler and ResumeRuntime, and the load is then looked for in its maps. From the
 * moment such a runtime may be waiting for us, ResumeRuntime is owed on every way out, within
 * --resume-deadline (the resume guarantee, attempt_owe_resume). attach.c calls these at its
 * steps; nothing here calls the attach back.
 */
#ifndef CLRATTACH_STARTUP_H
#define CLRATTACH_STARTUP_H

#include <stdbool.h>
#include <stdint.h>

#include "flow/attempt.h"

/*
 * watch --startup tells a paused runtime from a running one by the runtime's own answers, never
 * by a guess from outside (thread count, maps and ProcessInfo's command line differ between the
 * two only by how far startup has got): a runtime paused at startup answers AttachProfiler with
 * CORPROF_E_NOT_YET_AVAILABLE before it reads anything else (its EE has not started), and a
 * runtime no longer paused answers StartupProfiler with E_INVALIDARG. So a profiler that may
 * attach is sent AttachProfiler first: a running runtime attaches it, a paused one refuses it
 * and gets --env, StartupProfiler and the resume (startup_probe_first; with --force, an inert
 * one too). A profiler inert on attach must never be attached: it gets --env and
 * StartupProfiler, and a refusal with E_INVALIDARG says the app runs (startup_found_running):
 * it is skipped, and the variables have reached a running app, where nothing reads them. (A
 * StartupProfiler without its payload would tell the two apart with no side effect, but the
 * .NET 10 runtime crashes on it, running or paused: never sent.)
 */
bool startup_probe_first(const struct attempt *a);
bool startup_found_running(const struct attempt *a);

/* --env, then StartupProfiler. Returns 0 with a->hr, the first refusal or 0. */
int startup_load(struct attempt *a);

/* After StartupProfiler and ResumeRuntime: loaded_at_startup when the profiler shows in the
 * maps within the settle time, else startup_load_failed (or the app died). */
int startup_settle(struct attempt *a);

#endif
