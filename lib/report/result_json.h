/* SPDX-License-Identifier: Apache-2.0 */
/* The machine-readable results (`-o json`): one JSON document per result, on one line (`watch`
 * prints one per outcome). Built with jansson; strings from the target are escaped by it and
 * rendered, never pasted. */
#ifndef CLRATTACH_RESULT_JSON_H
#define CLRATTACH_RESULT_JSON_H

#include "flow/attach.h"
#include "flow/ps.h"

/* Returns a malloc'd one-line JSON object for an attach result, or NULL when out of memory.
 * `exit_code` is the code the process ends with for this result (the outcome's code, or 10 when
 * a required Event failed): the JSON never claims another one. */
char *result_attach_json(const struct attach_result *r, const char *profiler,
                         const struct ipc_guid *clsid, int exit_code);

/* Was what `r` delivered a home (lib/profset/profhome.h: RID folders beside other files,
 * delivered whole)? It is the one layout whose entry lies in a folder named by the variant below
 * the delivered directory: a bundle's build is delivered as its RID folder's contents. */
bool result_delivered_home(const struct attach_result *r);

/* Returns a malloc'd one-line JSON object for a `ps` entry, or NULL when out of memory. */
char *result_ps_json(const struct ps_entry *p);

/* `ps -o json`: one object {"command":"ps","processes":[...]}, the list empty when nothing is
 * found. Returns a malloc'd one-line document, or NULL when out of memory. */
char *result_ps_list_json(const struct ps_entry *list, size_t n);

/* An error that ends a command before any result (a usage error, a sandbox that cannot be set
 * up) as the one JSON document `-o json` promises for every outcome: command, outcome,
 * exit_code, error, next_step. NULL when out of memory. */
char *result_error_json(const char *command, enum attach_outcome outcome, const char *msg,
                        const char *hint);

#endif
