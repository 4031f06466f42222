/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profilers whose attach is known to do nothing: the runtime loads them, their
 * InitializeForAttach answers S_OK and they never start. Attaching one reports a success that is
 * not one, so attach refuses them unless --force. Pure data and a lookup; each row cites the
 * vendor's own source that shows it (docs/bundles.md repeats the table).
 *
 * A row matches only on its CLSID AND its entry library's file name. Neither alone names a
 * vendor: a CLSID is copied with the code (Pyroscope's profiler is a fork of Datadog's and keeps
 * its CLSID; the clr-samples template's CLSID sits in unrelated profilers), and a file name is
 * anyone's to choose. A library with another vendor's name but its own CLSID is someone else's
 * profiler, and the runtime would not find the vendor's class in it anyway.
 */
#ifndef CLRATTACH_VENDORS_H
#define CLRATTACH_VENDORS_H

#include <stddef.h>

struct vendor_noop {
    const char *vendor;    /* who ships it, as people call it */
    const char *entry;     /* the entry library's file name */
    const char *clsid;     /* "{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}", compared without case */
    const char *on_attach; /* what its InitializeForAttach does */
    const char *startup;   /* the vendor's own way to load it at startup */
    const char *source;    /* repository, path and commit of the code that shows it */
    /* "NAME=VALUE" the vendor's own code needs at startup besides the runtime's loading it
     * ({dir}/{entry} expanded as for --env), NULL-terminated; NULL when none is verified. Sent
     * with every startup load of the profiler; the operator's --env of a name wins. */
    const char *const *startup_env;
    const char *startup_env_source; /* where the vendor's code reads them */
};

/* The verified rows. */
extern const struct vendor_noop vendors_noop[];
extern const size_t vendors_noop_count;

/* The row of `table` (n rows) whose entry file name equals `entry_name` (a bare file name;
 * case-sensitive, as the loader is) and whose CLSID equals `clsid` (braced text as
 * ipc_guid_format() writes it; case-insensitive), or NULL. */
const struct vendor_noop *vendors_find_noop(const struct vendor_noop *table, size_t n,
                                            const char *entry_name, const char *clsid);

/* The variables of a startup load of `row` (NULL: none known): the operator's `n_user` first,
 * then each of row->startup_env whose NAME the operator did not give, into `out` (`max`). The
 * names added are written to `added` ("A, B", truncated to `size`; "" for none). Returns the
 * count, or -E2BIG past `max`. */
int vendors_startup_env(const struct vendor_noop *row, const char *const *user, size_t n_user,
                        const char **out, size_t max, char *added, size_t size);

#endif
