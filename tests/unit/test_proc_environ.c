/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "target/proc_environ.h"

static void test_environ(void **state)
{
    (void)state;
    static const char env[] = "A=1\0TMPDIR=/x\0TMPDIRX=no\0B\0TMPDIR=/last\0C=";
    const char *v;
    size_t vl;
    assert_int_equal(proc_environ_get(env, sizeof(env) - 1, "TMPDIR", &v, &vl), 1);
    assert_int_equal(vl, 5);
    assert_memory_equal(v, "/last", 5);
    assert_int_equal(proc_environ_get(env, sizeof(env) - 1, "C", &v, &vl), 1);
    assert_int_equal(vl, 0);
    assert_int_equal(proc_environ_get(env, sizeof(env) - 1, "B", &v, &vl), 0);
    assert_int_equal(proc_environ_get(env, sizeof(env) - 1, "TMP", &v, &vl), 0);
    assert_int_equal(proc_environ_get("", 0, "A", &v, &vl), 0);
}

static void test_environ_many(void **state)
{
    (void)state;
    /* One pass finds what one lookup per name finds: the last assignment, absent as NULL, an
     * entry without '=' or a longer name never matching. */
    static const char env[] = "A=1\0TMPDIR=/x\0TMPDIRX=no\0B\0TMPDIR=/last\0C=\0A=2";
    static const char *const names[] = {"TMPDIR", "A", "B", "C", "TMP", "D"};
    const char *v[6];
    size_t vl[6];
    proc_environ_get_many(env, sizeof(env) - 1, names, 6, v, vl);
    assert_non_null(v[0]);
    assert_int_equal(vl[0], 5);
    assert_memory_equal(v[0], "/last", 5);
    assert_int_equal(vl[1], 1);
    assert_memory_equal(v[1], "2", 1);
    assert_null(v[2]);
    assert_non_null(v[3]);
    assert_int_equal(vl[3], 0);
    assert_null(v[4]);
    assert_null(v[5]);
    /* A block cut short inside an entry: the value ends at the end of the buffer. */
    static const char cut[] = "X=1\0TMPDIR=/tr";
    proc_environ_get_many(cut, sizeof(cut) - 1, names, 1, v, vl);
    assert_int_equal(vl[0], 3);
    assert_memory_equal(v[0], "/tr", 3);
    proc_environ_get_many("", 0, names, 6, v, vl);
    for (size_t i = 0; i < 6; i++)
        assert_null(v[i]);
}

static void test_diagnostics_off(void **state)
{
    (void)state;
    /* Every spelling the runtime reads turns the IPC off; only "0" does, and the last wins. */
    static const char on[] = "DOTNET_EnableDiagnostics=1\0COMPlus_EnableDiagnostics=00\0X=0";
    static const char ipc[] = "A=1\0COMPlus_EnableDiagnostics_IPC=0";
    static const char last[] = "DOTNET_EnableDiagnostics=0\0DOTNET_EnableDiagnostics=1";
    static const char dotnet[] = "DOTNET_EnableDiagnostics_IPC=0\0DOTNET_EnableDiagnostics=0";
    assert_null(proc_environ_diagnostics_off(on, sizeof(on) - 1));
    assert_string_equal(proc_environ_diagnostics_off(ipc, sizeof(ipc) - 1),
                        "COMPlus_EnableDiagnostics_IPC");
    assert_null(proc_environ_diagnostics_off(last, sizeof(last) - 1));
    assert_string_equal(proc_environ_diagnostics_off(dotnet, sizeof(dotnet) - 1),
                        "DOTNET_EnableDiagnostics");
    assert_null(proc_environ_diagnostics_off(NULL, 0));
}

static void test_tmpdir(void **state)
{
    (void)state;
    char out[64];
    struct cla_error e = {0};
    static const char a[] = "TMPDIR=/var/tmp", b[] = "X=1", c[] = "TMPDIR=", d[] = "TMPDIR=rel",
                      f[] = "TMPDIR=/a/";
    assert_int_equal(proc_tmpdir_from_environ(a, sizeof(a) - 1, out, sizeof(out), &e), 0);
    assert_string_equal(out, "/var/tmp/");
    assert_int_equal(proc_tmpdir_from_environ(b, sizeof(b) - 1, out, sizeof(out), &e), 0);
    assert_string_equal(out, "/tmp/");
    assert_int_equal(proc_tmpdir_from_environ(c, sizeof(c) - 1, out, sizeof(out), &e), 0);
    assert_string_equal(out, "/tmp/");
    assert_int_equal(proc_tmpdir_from_environ(d, sizeof(d) - 1, out, sizeof(out), &e), -EPROTO);
    assert_string_equal(e.msg, "the target's TMPDIR 'rel' is not an absolute path");
    assert_int_equal(proc_tmpdir_from_environ(f, sizeof(f) - 1, out, sizeof(out), &e), 0);
    assert_string_equal(out, "/a/");
    char small[8];
    assert_int_equal(proc_tmpdir_from_environ(a, sizeof(a) - 1, small, sizeof(small), &e),
                     -ENAMETOOLONG);
    /* The target's data breaking a rule: -EPROTO with the rule named, the value rendered. */
#define REFUSED(lit, want)                                                                         \
    do {                                                                                           \
        static const char v_[] = lit;                                                              \
        assert_int_equal(proc_tmpdir_from_environ(v_, sizeof(v_) - 1, out, sizeof(out), &e),       \
                         -EPROTO);                                                                 \
        assert_string_equal(e.msg, want);                                                          \
    } while (0)
    REFUSED("TMPDIR=/a\nb", "the target's TMPDIR '/a\\x0ab' holds a control character U+000A at "
                            "byte 2");
    REFUSED("TMPDIR=/a\x1b]0;x\x07",
            "the target's TMPDIR '/a\\x1b]0;x\\x07' holds a control character U+001B at byte 2");
    REFUSED("TMPDIR=/tmp/\x7f", "the target's TMPDIR '/tmp/\\x7f' holds a control character "
                                "U+007F at byte 5");
    REFUSED("TMPDIR=/tmp/\xC2\x9B"
            "2J",
            "the target's TMPDIR '/tmp/\\u{009b}2J' holds a C1 "
            "control character U+009B at byte 5");
    REFUSED("TMPDIR=/tmp/\x9b"
            "2J",
            "the target's TMPDIR '/tmp/\\x9b2J' is not valid UTF-8 at "
            "byte 5");
    REFUSED("TMPDIR=/tmp/\xff\xfe", "the target's TMPDIR '/tmp/\\xff\\xfe' is not valid UTF-8 at "
                                    "byte 5");
    REFUSED("TMPDIR=/tmp/\xC0\xAF", "the target's TMPDIR '/tmp/\\xc0\\xaf' is not valid UTF-8 at "
                                    "byte 5");
    REFUSED("TMPDIR=/tmp/\xE2\x80\xAE"
            "exe",
            "the target's TMPDIR '/tmp/\\u{202e}exe' holds a "
            "bidi control U+202E at byte 5");
    REFUSED("TMPDIR=/tmp/a\xE2\x80\x8B", "the target's TMPDIR '/tmp/a\\u{200b}' holds an "
                                         "invisible character U+200B at byte 6");
    REFUSED("TMPDIR=/tmp/\xEF\xBB\xBF", "the target's TMPDIR '/tmp/\\u{feff}' holds an invisible "
                                        "character U+FEFF at byte 5");
    REFUSED("TMPDIR=/tmp/a/../b", "the target's TMPDIR '/tmp/a/../b' has a '..' component");
    REFUSED("TMPDIR=/..", "the target's TMPDIR '/..' has a '..' component");
    REFUSED("TMPDIR=/tmp/..", "the target's TMPDIR '/tmp/..' has a '..' component");
    REFUSED("TMPDIR=/tmp/./x", "the target's TMPDIR '/tmp/./x' has a '.' component");
    REFUSED("TMPDIR=/tmp/.", "the target's TMPDIR '/tmp/.' has a '.' component");
    /* A relative value is quoted rendered, never with its control or invalid bytes raw. */
    REFUSED("TMPDIR=x\x1b]0;y\x07", "the target's TMPDIR 'x\\x1b]0;y\\x07' holds a control "
                                    "character U+001B at byte 1");
    REFUSED("TMPDIR=x\\y", "the target's TMPDIR 'x\\\\y' is not an absolute path");
#undef REFUSED
    /* Names that only look like dots, dots inside names, doubled slashes: accepted. */
    static const char ok1[] = "TMPDIR=/tmp/..a/.b/a./a..//c\xE2\x80\xA6";
    assert_int_equal(proc_tmpdir_from_environ(ok1, sizeof(ok1) - 1, out, sizeof(out), &e), 0);
    assert_string_equal(out, "/tmp/..a/.b/a./a..//c\xE2\x80\xA6/");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_environ),
        cmocka_unit_test(test_environ_many),
        cmocka_unit_test(test_diagnostics_off),
        cmocka_unit_test(test_tmpdir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
