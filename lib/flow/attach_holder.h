/* SPDX-License-Identifier: Apache-2.0 */
/* The attach flow's search for the profiler that already holds a runtime's slot (already_active):
 * a mapped library that exports DllGetClassObject. */
#ifndef CLRATTACH_ATTACH_HOLDER_H
#define CLRATTACH_ATTACH_HOLDER_H

#include "flow/attempt.h"

/* Fills res->holder with the profiler the target has loaded (rendered), and res->mapped with
 * whether our own delivered `p` shows in its maps; when the search cannot tell, res->holder_gap
 * says why. Bounded by HOLDER_* (bounds.h) and o->timeout_ms from now. */
void attach_holder_find(const struct attach_opts *o, struct target *t, const struct placed *p,
                        struct attach_result *res);

#endif
