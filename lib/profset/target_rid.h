/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target's runtime identifier, which decides the profiler build that can load there: the
 * I/O half of rid.h. In order of trust: the operator's --rid; the runtime's own ProcessInfo
 * answer (normalised: alpine.3.17-x64 means linux-musl-x64); else the loader mapped in the
 * target (ld-musl or ld-linux) and the ELF machine of the mapped libcoreclr.so, or of the
 * executable when no runtime library is mapped. Reads the pinned target's maps (target_maps),
 * executable and, through its root, its runtime library: act as its user first (creds.h).
 */
#ifndef CLRATTACH_TARGET_RID_H
#define CLRATTACH_TARGET_RID_H

#include <stdbool.h>

#include "base/err.h"
#include "profset/rid.h"

struct target;

/* Where the RID came from. watch's children send this value over their pipe (as an index into
 * attach_rid_sources), so the order is part of that wire format: add at the end only. */
enum target_rid_source {
    TARGET_RID_OPTION,   /* --rid */
    TARGET_RID_RUNTIME,  /* the runtime's own answer */
    TARGET_RID_MAPS_EXE, /* the loader in its maps, the ELF machine of its runtime or exe */
};

struct target_rid_input {
    const char *option;      /* --rid, NULL when not given */
    bool force;              /* --force-rid: the option wins over the runtime's answer */
    const char *runtime_rid; /* the runtime's answer as it gave it, "" when it gave none */
};

/* Fills *ret and *ret_source. A RID guessed from the maps and the ELF may be partly unknown
 * (ret->portable ""): the caller's choice of build then fails with its own words. Returns 0, or
 * -EINVAL when the option is not a Linux RID or contradicts the runtime's answer without
 * `force` (e names it and the way out). */
int target_rid_detect(struct target *t, const struct target_rid_input *in, struct rid *ret,
                      enum target_rid_source *ret_source, struct cla_error *e);

#endif
