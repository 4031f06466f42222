/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/bounds.h"
#include "runtime/ipc_environ.h"

/* A ProcessEnvironment block as the runtime streams it: u32 count, then each variable as an IPC
 * string (u32 units with the NUL, UTF-16LE). ASCII only here. */
static size_t block(uint8_t *out, size_t size, const char *const *vars, size_t n)
{
    size_t off = 4;
    for (int i = 0; i < 4; i++)
        out[i] = (uint8_t)(n >> (8 * i));
    for (size_t v = 0; v < n; v++) {
        size_t units = strlen(vars[v]) + 1;
        assert_true(off + 4 + 2 * units <= size);
        for (int i = 0; i < 4; i++)
            out[off + i] = (uint8_t)(units >> (8 * i));
        off += 4;
        for (size_t k = 0; k < units; k++) {
            out[off++] = (uint8_t)vars[v][k];
            out[off++] = 0;
        }
    }
    return off;
}

static int pauses(const char *const *vars, size_t n)
{
    static uint8_t buf[65536];
    struct cla_error e = {0};
    size_t len = block(buf, sizeof(buf), vars, n);
    int r = ipc_environ_pauses(buf, len, &e);
    if (r < 0)
        fail_msg("malformed: %s", e.msg);
    return r;
}

#define PAUSES(...)                                                                                \
    pauses((const char *const[]){__VA_ARGS__},                                                     \
           sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static void test_port_tags(void **state)
{
    (void)state;
    /* The default tags are connect,suspend. */
    assert_int_equal(PAUSES("HOME=/", "DOTNET_DiagnosticPorts=/diag/port.sock"), 1);
    assert_int_equal(PAUSES("DOTNET_DiagnosticPorts=/diag/port.sock,nosuspend"), 0);
    assert_int_equal(PAUSES("DOTNET_DiagnosticPorts=/diag/port.sock,connect,NoSuspend"), 0);
    /* The first tag of a kind wins. */
    assert_int_equal(PAUSES("DOTNET_DiagnosticPorts=/d/p.sock,nosuspend,suspend"), 0);
    assert_int_equal(PAUSES("DOTNET_DiagnosticPorts=/d/p.sock,suspend,nosuspend"), 1);
    /* Any pausing port pauses the runtime. */
    assert_int_equal(PAUSES("DOTNET_DiagnosticPorts=/a,nosuspend;/b"), 1);
    assert_int_equal(PAUSES("DOTNET_DiagnosticPorts=/a,nosuspend;;/b,nosuspend"), 0);
    /* Empty parts are skipped (strtok): ",nosuspend" is a port at the address "nosuspend", and
     * it pauses. Nothing but separators is no port; a listen port (CoreCLR ignores it) neither. */
    assert_int_equal(PAUSES("DOTNET_DiagnosticPorts=,nosuspend"), 1);
    assert_int_equal(PAUSES("DOTNET_DiagnosticPorts=;,;"), 0);
    assert_int_equal(PAUSES("DOTNET_DiagnosticPorts=/l.sock,listen"), 0);
    /* No ports at all, and a name that only starts like ours. */
    assert_int_equal(PAUSES("PATH=/bin"), 0);
    assert_int_equal(PAUSES("DOTNET_DiagnosticPortsX=/a"), 0);
    assert_int_equal(PAUSES("dotnet_diagnosticports=/a"), 0);
}

static void test_precedence_and_default_port(void **state)
{
    (void)state;
    /* DOTNET_ wins over COMPlus_; COMPlus_ alone counts. */
    assert_int_equal(PAUSES("COMPlus_DiagnosticPorts=/a", "DOTNET_DiagnosticPorts=/a,nosuspend"),
                     0);
    assert_int_equal(PAUSES("COMPlus_DiagnosticPorts=/a"), 1);
    /* The default listen port, paused by DefaultDiagnosticPortSuspend (hex, non-zero). */
    assert_int_equal(
        PAUSES("DOTNET_DiagnosticPorts=/a,nosuspend", "DOTNET_DefaultDiagnosticPortSuspend=1"), 1);
    assert_int_equal(PAUSES("DOTNET_DefaultDiagnosticPortSuspend=0"), 0);
    assert_int_equal(PAUSES("DOTNET_DefaultDiagnosticPortSuspend=0x0"), 0);
    assert_int_equal(PAUSES("DOTNET_DefaultDiagnosticPortSuspend=a"), 1);
    assert_int_equal(
        PAUSES("COMPlus_DefaultDiagnosticPortSuspend=1", "DOTNET_DefaultDiagnosticPortSuspend=0"),
        0);
}

static void test_malformed(void **state)
{
    uint8_t buf[256];
    struct cla_error e = {0};
    const char *vars[] = {"A=1", "B=2"};
    (void)state;

    size_t len = block(buf, sizeof(buf), vars, 2);
    assert_int_equal(ipc_environ_pauses(buf, len, &e), 0);
    /* Cut anywhere: refused. */
    for (size_t n = 0; n < len; n++)
        assert_int_equal(ipc_environ_pauses(buf, n, &e), -EPROTO);
    /* Trailing bytes, a missing NUL, a count too large. */
    buf[len] = 0;
    assert_int_equal(ipc_environ_pauses(buf, len + 1, &e), -EPROTO);
    buf[len - 2] = 'x';
    assert_int_equal(ipc_environ_pauses(buf, len, &e), -EPROTO);
    buf[len - 2] = 0;
    buf[0] = 3;
    assert_int_equal(ipc_environ_pauses(buf, len, &e), -EPROTO);
    buf[0] = 0, buf[3] = 0x7f;
    assert_int_equal(ipc_environ_pauses(buf, len, &e), -EPROTO);
    /* A string length that runs past the end (and would overflow 2 * units). */
    block(buf, sizeof(buf), vars, 2);
    buf[4] = buf[5] = buf[6] = buf[7] = 0xff;
    assert_int_equal(ipc_environ_pauses(buf, len, &e), -EPROTO);
}

/* The same decision from two values, as `ps` takes them from /proc/<pid>/environ. */
static void test_pauses_vars(void **state)
{
    char big[5000];
    (void)state;
    assert_int_equal(ipc_environ_pauses_vars(NULL, NULL), 0);
    assert_int_equal(ipc_environ_pauses_vars(NULL, "1"), 1);
    assert_int_equal(ipc_environ_pauses_vars(NULL, "0x0"), 0);
    assert_int_equal(ipc_environ_pauses_vars("/d/p.sock", NULL), 1);
    assert_int_equal(ipc_environ_pauses_vars("/d/p.sock,nosuspend", "0"), 0);
    assert_int_equal(ipc_environ_pauses_vars("/d/p.sock,nosuspend", "1"), 1);
    assert_int_equal(ipc_environ_pauses_vars("/l.sock,listen", NULL), 0);
    /* Longer than the module reads: counted as pausing, never cut into a shorter meaning. */
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(ipc_environ_pauses_vars(big, NULL), 1);
}

static void test_head(void **state)
{
    uint32_t n = 0;
    struct cla_error e = {0};
    (void)state;

    assert_int_equal(ipc_environ_decode_head((const uint8_t *)"\x10\0\0\0\0\0", 6, &n, &e), 0);
    assert_int_equal(n, 16);
    assert_int_equal(ipc_environ_decode_head((const uint8_t *)"\x10\0\0\0\0", 5, &n, &e), -EPROTO);
    assert_int_equal(ipc_environ_decode_head((const uint8_t *)"\x02\0\0\0\0\0", 6, &n, &e),
                     -EPROTO);
    /* More than the cap: not read at all. */
    assert_int_equal(ipc_environ_decode_head((const uint8_t *)"\x01\0\x08\0\0\0", 6, &n, &e),
                     -E2BIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_port_tags),
        cmocka_unit_test(test_precedence_and_default_port),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_pauses_vars),
        cmocka_unit_test(test_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
