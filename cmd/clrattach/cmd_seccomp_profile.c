/* SPDX-License-Identifier: Apache-2.0 */
/* `clrattach seccomp-profile`: the filter we run under, as a profile a cluster can load. */
#include <getopt.h>

#include "cli.h"
#include "base/util.h"

static const char usage_seccomp[] =
    "Usage: clrattach seccomp-profile [--stats]\n"
    "\n"
    "Prints the OCI/Kubernetes seccomp profile generated from the same allow-list that clrattach\n"
    "loads in-process (use it as a localhostProfile). --stats prints counts instead.\n";

int cmd_seccomp_profile(int argc, char **argv)
{
    static const struct option opts[] = {
        {"stats", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    bool stats = false;
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 's': stats = true; break;
        case 'h': fputs(usage_seccomp, stdout); return 0;
        default: return usage_error("seccomp-profile", "unrecognised option");
        }
    }
    if (optind < argc)
        return usage_error("seccomp-profile", "unexpected argument '%s'", argv[optind]);
    /* No sandbox here: this command reads no target and nothing of ours, it prints the table
     * the filter is built from. */
    if (stats) {
        printf("allowed syscalls: %zu\n", sandbox_allowed_count());
        return 0;
    }
    struct cla_error e = {0};
    _cleanup_free_ char *js = NULL;
    if (sandbox_profile_json(&js, &e) < 0) {
        /* Exit 1, internal error: the table is built in, so failing to write it out is ours. */
        print_error("seccomp-profile", &e);
        return 1;
    }
    printf("%s\n", js);
    return 0;
}
