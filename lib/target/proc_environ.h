/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/<pid>/environ, on buffers only: the environment block as it was at execve, every byte
 * the target's own (and cut short where the target rewrote its stack). Lookups stay inside the
 * buffer; the TMPDIR the runtime would use is checked before any of it reaches a path or a
 * message of ours.
 */
#ifndef CLRATTACH_PROC_ENVIRON_H
#define CLRATTACH_PROC_ENVIRON_H

#include <stddef.h>

#include "base/err.h"

/* Looks `name` up in a NUL-separated environment block. Returns 1 and points *ret_value into buf
 * (with its length; the value need not be NUL-terminated at the end of a truncated block), or 0
 * when absent. The last assignment wins, as getenv() in the target would see it. */
int proc_environ_get(const char *buf, size_t len, const char *name, const char **ret_value,
                     size_t *ret_len);

/* proc_environ_get for `n` names in one pass over the block (a scan of thousands of processes
 * reads every environment: one pass, not one per name). values[i] is NULL when names[i] is
 * absent, else it points into buf with lens[i] bytes. */
void proc_environ_get_many(const char *buf, size_t len, const char *const *names, size_t n,
                           const char **values, size_t *lens);

/* Which variable of the environment block turns the runtime's diagnostic IPC off (=0): the
 * runtime reads each knob under both prefixes, DOTNET_ and COMPlus_, and .NET 8 added the _IPC
 * switch. Returns its name (static), or NULL when none does or buf is NULL. */
const char *proc_environ_diagnostics_off(const char *buf, size_t len);

/* The runtime's TMPDIR rule (PAL GetTempPathA): the value when set and non-empty, with one '/'
 * appended unless it ends in one; else "/tmp/". Writes into out. The target's value is refused
 * with -EPROTO and a message naming the rule it breaks (quoting it rendered) when it is not
 * absolute, has a "." or ".." component, is not valid UTF-8, or holds any character render.h
 * escapes (control, C1, bidi, invisible, separator); -ENAMETOOLONG when it does not fit. */
int proc_tmpdir_from_environ(const char *env, size_t env_len, char *out, size_t size,
                             struct cla_error *e);

#endif
