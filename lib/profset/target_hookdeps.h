/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A startup hook's referenced assemblies looked for in the app's view (its root, as its user):
 * delivered with the hook, or in the directories the app resolves from (hookdeps.h). Reads the
 * target's maps and its files; writes nothing, sends nothing.
 */
#ifndef CLRATTACH_TARGET_HOOKDEPS_H
#define CLRATTACH_TARGET_HOOKDEPS_H

#include <stddef.h>

#include "base/err.h"
#include "profset/assembly.h"
#include "profset/profdir.h"

struct target;

/* Every reference of `id` not delivered with the hook (`pd`: its directory, NULL for a file
 * alone) is looked for as "<name>.dll" in each directory the app resolves from, through the
 * pinned target's root (its root open, as its user). Returns 0 when each is somewhere; when the
 * app's shared framework is not in its maps (a single-file app), 0 with `note` saying what was
 * not checked ("" else); -ENOENT with e naming the missing ones and the next step. `entry` is
 * the app's entry assembly's simple name (ProcessInfo2), NULL when unknown. */
int target_hookdeps_check(const struct target *t, const struct assembly_identity *id,
                          const struct profdir *pd, const char *entry, const char *shown,
                          char *note, size_t note_size, struct cla_error *e);

#endif
