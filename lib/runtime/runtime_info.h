/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runtime's version, RID, OS and architecture as we show them, from its ProcessInfo answer.
 * Those strings are the target's text, so only their rendering (render.h) is kept: attach and
 * ps show the same runtime the same way. Pure: no I/O.
 */
#ifndef CLRATTACH_RUNTIME_INFO_H
#define CLRATTACH_RUNTIME_INFO_H

#include "runtime/ipc.h"

struct runtime_info {
    char version[64]; /* "8.0.11", "" when not given */
    char rid[64];     /* "linux-x64": a RID that needed escaping is no RID rid_parse() accepts */
    char os[16];
    char arch[16];
};

/* Fills *ret from `pi` (a missing string is ""), each field rendered and cut to its size. */
void runtime_info_from(const struct ipc_process_info *pi, struct runtime_info *ret);

#endif
