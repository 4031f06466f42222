/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CLRATTACH_RESULT_JSON_H
#define CLRATTACH_RESULT_JSON_H

/* The machine-readable results (`-o json`): one JSON object per result, one per line. Built with
 * jansson; strings from the target are escaped by it, never pasted. */

#include "attach.h"
#include "ps.h"

/* Returns a malloc'd one-line JSON object for an attach result, or NULL when out of memory.
 * `exit_code` is the code the process ends with for this result (the outcome's code, or 10 when
 * a required Event failed): the JSON never claims another one. */
char *result_attach_json(const struct attach_result *r, const char *profiler,
                         const struct ipc_guid *clsid, int exit_code);

/* Returns a malloc'd one-line JSON object for a `ps` entry, or NULL when out of memory. */
char *result_ps_json(const struct ps_entry *p);

#endif
