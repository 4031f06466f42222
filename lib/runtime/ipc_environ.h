/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ProcessEnvironment (0x04/0x02, .NET 6+), decoded on buffers, and the one question `--listen`
 * asks of it: does this runtime pause at startup? A runtime that connects to us cannot be seen
 * from our side (no /proc, no shared pid namespace), so its own answer is the only way to tell a
 * "suspend" port from a "nosuspend" one: the advertisement does not carry the tags.
 *
 * The reply (dotnet/runtime src/native/eventpipe/ds-process-protocol.c,
 * process_protocol_helper_get_process_env): an OK frame whose payload is u32 incoming_bytes and
 * u16 reserved, then, outside the frame on the same connection, incoming_bytes of: u32 count,
 * then count IPC strings "NAME=VALUE" (u32 UTF-16 units with the NUL, then the units).
 */
#ifndef CLRATTACH_IPC_ENVIRON_H
#define CLRATTACH_IPC_ENVIRON_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define IPC_PROCESS_ENVIRONMENT 0x02

/* Decodes the 6-byte OK payload. Returns 0 with the size of the block that follows, -EPROTO for
 * another length, -E2BIG past IPC_ENV_BLOCK_MAX (then the block is not read at all). */
int ipc_environ_decode_head(const uint8_t *payload, size_t len, uint32_t *ret_block_len,
                            struct cla_error *e);

/* Walks the block: the count and every string in bounds, each NUL-terminated where its length
 * says, at most IPC_ENV_VARS_MAX of them, nothing left over. From DOTNET_DiagnosticPorts
 * (COMPlus_ when DOTNET_ is absent, as CLRConfig looks them up) and
 * DOTNET_DefaultDiagnosticPortSuspend, tells whether any port pauses the runtime at startup
 * (ds-ipc.c ds_ipc_stream_factory_any_suspended_ports): a port with an address pauses unless its
 * first suspend-mode tag is "nosuspend" (tags case-insensitive; the first of a kind wins); the
 * default port pauses when DefaultDiagnosticPortSuspend is a non-zero number (CLRConfig reads it
 * as hex). Returns 1 (pauses), 0 (does not), or -EPROTO for a malformed block. */
int ipc_environ_pauses(const uint8_t *block, size_t len, struct cla_error *e);

/* The same decision from the two values themselves (NULL when the variable is absent; the
 * DOTNET_ name, else the COMPlus_ one), as an environment read elsewhere gives them (`ps` reads
 * /proc/<pid>/environ). A port configuration longer than this module reads counts as pausing.
 * Returns 1 or 0. */
int ipc_environ_pauses_vars(const char *ports, const char *suspend);

#endif
