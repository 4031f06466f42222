/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_RESULT_JSON_H
#define CLRATTACH_RESULT_JSON_H

/* The machine-readable results (`-o json`): one JSON object per result, one per line. Built with
 * jansson; strings from the target are escaped by it, never pasted. */

#include "attach.h"
#include "ps.h"

/* Returns a malloc'd one-line JSON object for an attach result, or NULL when out of memory. */
char *result_attach_json(const struct attach_result *r, const char *profiler,
                         const struct ipc_guid *clsid);

/* Returns a malloc'd one-line JSON object for a `ps` entry, or NULL when out of memory. */
char *result_ps_json(const struct ps_entry *p);

#endif
