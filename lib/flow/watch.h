/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sidecar mode: scan for .NET processes that match a selector and attach to each runtime
 * instance exactly once. An instance is (pid, start time): a restarted app is a new instance.
 * Outcomes that cannot change by retrying (attached, already active, load failure, permission)
 * are final; transient ones (runtime not ready, timeouts, a socket not there yet) are retried
 * with exponential backoff a bounded number of times, and a delivery failure (a name squatted
 * by another uid, a full directory) is retried with backoff for as long as the instance lives.
 * State for processes that are gone is dropped at every scan (a failing one's back-off is kept
 * a little longer, for its pid's next instance), so memory follows the live process count and
 * the recent failures, not uptime.
 *
 * Each attach runs in a child process of its own, at most WATCH_POOL_MAX at once, on the very
 * process the scan selected (pinned by pidfd and start time): a runtime that never answers holds
 * one slot, not the watcher, and SIGTERM ends the watcher within a second whatever is in flight.
 *
 * Fairness. Free slots go to the due instances in the order they became due (the one waiting
 * longest first, whatever its pid); an instance's next attempt after a failure is due only after
 * its back-off, which a new instance of the same pid (an execve, or a new start time on the pid)
 * inherits, counting as a retry. With S = WATCH_POOL_MAX, T = --timeout, I = the scan interval
 * and R = watch_attach_deadline_ms(T) + I = 2T + 5 s + I (the most an attach holds a slot, until
 * the next scan hands it on), an instance that becomes due while N other matching instances are
 * running or waiting gets a slot within
 *     ceil(N / S) * R + I        on a first attempt,
 *     ceil(N / (S - 1)) * R + I  on a retry (retries never take the last free slot),
 * however those N behave: each of them holds a slot at most once in that time, because once its
 * attempt ends it is due again only after its back-off, and a new instance (an exec, a restart,
 * any new process) queues behind those already waiting. A retry is due at the end of its own
 * back-off (WATCH_RETRY_FIRST_MS doubling to WATCH_RETRY_MAX_MS, and at least as long as its last
 * attempt took). docs/security.md ("Fairness") states the same for operators.
 */
#ifndef CLRATTACH_WATCH_H
#define CLRATTACH_WATCH_H

#include <stdbool.h>

#include "base/err.h"
#include "flow/attach.h"
#include "flow/watch_opts.h"
#include "flow/watch_pool.h"
#include "flow/watch_table.h"

/* On stop, how long killed children are waited for before the watcher leaves anyway. */
#define WATCH_REAP_WAIT_MS 500

/* Runs until *stop (or max_scans, and the attaches of the last scan have ended). The ready file
 * is created after the first scan, which starts attaches but never waits for them. Returns 0 on
 * a clean stop, or a negative errno when /proc cannot be scanned or the ready file cannot be
 * created; either way no child is left running unless it could not be killed. */
int watch_run(const struct watch_opts *o, struct cla_error *e);

#endif
