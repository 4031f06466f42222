/* SPDX-License-Identifier: Apache-2.0 */
/* The attach flow's checks before anything is sent: the operator's inputs (before the target is
 * touched), a profiler known to be inert on attach, the client data expanded, the dependency check
 * after delivery. Each failure fills the result and returns the negative error. */
#ifndef CLRATTACH_ATTACH_CHECK_H
#define CLRATTACH_ATTACH_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "flow/attempt.h"

/* The operator's inputs and our own files (profset_load into `ps`), all checked before anything
 * touches the target, and read before we act as the target's user. *ret_inert is the profiler's
 * row in the table of those inert on attach (profset/vendors.h), NULL for one not in it; such a
 * profiler is refused here (inert_on_attach) unless --force or --startup. */
int attach_check_inputs(const struct attach_opts *o, struct profset *ps, struct attach_result *res,
                        const struct vendor_noop **ret_inert);

/* The refusal (inert_on_attach) of the profiler `v`, `why` saying how the app was found running. */
int attach_check_refuse_inert(struct attach_result *res, const struct vendor_noop *v,
                              const char *why);

/* Can the target's loader find every library the delivered profiler needs (depcheck.h)? A
 * missing one undoes the delivery: dependency_missing. */
int attach_check_dependencies(struct attempt *a);

/* The client data with its {dir} and {entry} filled in for `p`, in a block of its own size.
 * Returns its length with *ret set (NULL for none), -E2BIG past the protocol's cap or -EINVAL. */
int attach_check_client_data(const struct attach_opts *o, const struct placed *p, uint8_t **ret,
                             struct cla_error *e);

#endif
