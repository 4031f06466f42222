/* SPDX-License-Identifier: Apache-2.0 */
/* The ProcessEnvironment reply, decoded on a buffer, and whether its DiagnosticPorts and
 * DefaultDiagnosticPortSuspend settings pause the runtime at startup. Pure: no I/O. */
#include "runtime/ipc_environ.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "base/bounds.h"

/* The bytes of a variable's value looked at; a longer DiagnosticPorts value (no real one is: it
 * lists a few socket paths) is taken to pause, the safe answer. */
#define VALUE_MAX 4096

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int ipc_environ_decode_head(const uint8_t *payload, size_t len, uint32_t *ret_block_len,
                            struct cla_error *e)
{
    if (len != 6)
        return err_set(e, -EPROTO, "ProcessEnvironment: a %zu-byte reply, 6 expected", len);
    uint32_t n = le32(payload);
    if (n > IPC_ENV_BLOCK_MAX)
        return err_set(e, -E2BIG, "ProcessEnvironment: a %u-byte block, more than %d", n,
                       IPC_ENV_BLOCK_MAX);
    if (n < 4)
        return err_set(e, -EPROTO, "ProcessEnvironment: a %u-byte block cannot hold its count", n);
    *ret_block_len = n;
    return 0;
}

/* One variable whose value we want, as found in the block. */
struct var {
    const char *name;
    bool found;
    bool long_value;
    char value[VALUE_MAX + 1];
};

/* Does the string (units, without its NUL) start with "NAME="? Then copies the value as
 * ASCII; a unit above 0x7F becomes 0x01, which matches no tag or digit. */
static void match(const uint8_t *units, size_t n, struct var *v)
{
    size_t nl = strlen(v->name);
    if (v->found || n <= nl)
        return;
    for (size_t i = 0; i < nl; i++)
        if (units[2 * i] != (uint8_t)v->name[i] || units[2 * i + 1])
            return;
    if (units[2 * nl] != '=' || units[2 * nl + 1])
        return;
    size_t vn = n - nl - 1;
    v->found = true;
    v->long_value = vn > VALUE_MAX;
    if (v->long_value)
        vn = VALUE_MAX;
    for (size_t i = 0; i < vn; i++) {
        const uint8_t *u = units + 2 * (nl + 1 + i);
        v->value[i] = u[1] || u[0] > 0x7F || !u[0] ? '\x01' : (char)u[0];
    }
    v->value[vn] = '\0';
}

static bool is_tag(const char *s, size_t n, const char *tag)
{
    return n == strlen(tag) && strncasecmp(s, tag, n) == 0;
}

/* The next token of s delimited by any of `delims`, empty tokens skipped: the runtime splits its
 * port configuration with a token splitter that skips empty tokens (ds-ipc.c,
 * ipc_stream_factory_split_port_config), so in
 * ",nosuspend" the address is "nosuspend". Returns its length, 0 at the end. */
static size_t token(const char **s, const char *delims, const char **ret)
{
    *s += strspn(*s, delims);
    *ret = *s;
    size_t n = strcspn(*s, delims);
    *s += n;
    return n;
}

/* Does one port configuration "ADDRESS[,tag...]" pause the runtime? */
static bool port_pauses(const char *cfg, size_t len)
{
    char buf[VALUE_MAX + 1];
    memcpy(buf, cfg, len);
    buf[len] = '\0';
    const char *s = buf, *t;
    size_t n = token(&s, ",", &t);
    if (!n)
        return false; /* no part at all: no port */
    int suspend = -1, connect = -1;
    while ((n = token(&s, ",", &t)) != 0) {
        if (suspend < 0 && is_tag(t, n, "suspend"))
            suspend = 1;
        else if (suspend < 0 && is_tag(t, n, "nosuspend"))
            suspend = 0;
        else if (connect < 0 && is_tag(t, n, "connect"))
            connect = 1;
        else if (connect < 0 && is_tag(t, n, "listen"))
            connect = 0;
    }
    /* CoreCLR ignores a listen port other than the default one (ds-ipc.c,
     * ipc_stream_factory_build_and_add_port): it never exists, so never pauses. */
    if (connect == 0)
        return false;
    return suspend != 0;
}

static bool ports_pause(const char *value)
{
    const char *s = value, *t;
    size_t n;
    while ((n = token(&s, ";", &t)) != 0)
        if (port_pauses(t, n))
            return true;
    return false;
}

static bool nonzero_hex(const char *v)
{
    if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X'))
        v += 2;
    for (; *v; v++) {
        bool hex = (*v >= '0' && *v <= '9') || (*v >= 'a' && *v <= 'f') || (*v >= 'A' && *v <= 'F');
        if (!hex)
            break;
        if (*v != '0')
            return true;
    }
    return false;
}

int ipc_environ_pauses(const uint8_t *block, size_t len, struct cla_error *e)
{
    struct var vars[] = {
        {.name = "DOTNET_DiagnosticPorts"},
        {.name = "COMPlus_DiagnosticPorts"},
        {.name = "DOTNET_DefaultDiagnosticPortSuspend"},
        {.name = "COMPlus_DefaultDiagnosticPortSuspend"},
    };
    if (len < 4 || len > IPC_ENV_BLOCK_MAX)
        return err_set(e, -EPROTO, "ProcessEnvironment: a %zu-byte block", len);
    uint32_t count = le32(block);
    if (count > IPC_ENV_VARS_MAX)
        return err_set(e, -EPROTO, "ProcessEnvironment: %u variables, more than %d", count,
                       IPC_ENV_VARS_MAX);
    size_t off = 4;
    for (uint32_t i = 0; i < count; i++) {
        if (len - off < 4)
            return err_set(e, -EPROTO, "ProcessEnvironment: variable %u is cut short", i);
        uint32_t units = le32(block + off);
        off += 4;
        if (units == 0)
            continue; /* an empty string: no data, as the protocol writes it */
        if (units > (len - off) / 2)
            return err_set(e, -EPROTO, "ProcessEnvironment: variable %u runs past the block", i);
        const uint8_t *u = block + off;
        if (u[2 * (units - 1)] || u[2 * (units - 1) + 1])
            return err_set(e, -EPROTO, "ProcessEnvironment: variable %u is not terminated", i);
        for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++)
            match(u, units - 1, &vars[k]);
        off += 2 * (size_t)units;
    }
    if (off != len)
        return err_set(e, -EPROTO, "ProcessEnvironment: %zu bytes after the last variable",
                       len - off);
    const struct var *ports = vars[0].found ? &vars[0] : &vars[1];
    const struct var *susp = vars[2].found ? &vars[2] : &vars[3];
    if (ports->found && ports->long_value)
        return 1;
    return ipc_environ_pauses_vars(ports->found ? ports->value : NULL,
                                   susp->found ? susp->value : NULL);
}

int ipc_environ_pauses_vars(const char *ports, const char *suspend)
{
    if (ports) {
        if (strlen(ports) > VALUE_MAX)
            return 1;
        if (ports_pause(ports))
            return 1;
    }
    return suspend && nonzero_hex(suspend) ? 1 : 0;
}
