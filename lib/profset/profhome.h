/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A vendor home: a profiler directory whose RID folders (linux-x64/, linux-musl-x64/, ...) stand
 * beside other files or folders (OpenTelemetry's linux-x64/ beside net/ and LICENSE). It is
 * delivered whole, names kept; the entry is the library in the RID folder that fits the target.
 * This module names RID folders and chooses a RID's entry in a sealed tree. Pure: no I/O.
 */
#ifndef CLRATTACH_PROFHOME_H
#define CLRATTACH_PROFHOME_H

#include <stdbool.h>

#include "base/err.h"
#include "profset/profdir.h"

/* Is `name` a runtime identifier's folder name, for any OS ("linux-x64",
 * "linux-musl-arm64", "win-x64", "osx-arm64", "freebsd-x64")? A folder so named holds a build
 * for that RID; any other entry beside one makes the directory a home. */
bool profhome_rid_folder(const char *name);

/* Does the sealed tree `pd` hold a file below the folder `rid`? */
bool profhome_has_folder(const struct profdir *pd, const char *rid);

/* Sets pd->entry to the entry for the folder `rid` of the sealed home `pd`: "<rid>/<want>" when
 * `want` (a bare file name, normalised) is given, else the only library below <rid>/ that exports
 * DllGetClassObject. Returns 0; -ENOENT when `want` is not in that folder (no message: the caller
 * may look elsewhere); -EINVAL naming the folder when it holds no such library, several, or
 * `want` is not a CLR profiler. `shown` names the home in messages. */
int profhome_choose_entry(struct profdir *pd, const char *rid, const char *want, const char *shown,
                          struct cla_error *e);

#endif
