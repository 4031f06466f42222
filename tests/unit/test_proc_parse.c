/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target/proc_parse.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[65536];
    *len = fread(buf, 1, sizeof(buf) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static void test_stat_fixtures(void **state)
{
    (void)state;
    size_t len;
    struct proc_stat st;
    struct cla_error e = {0};
    char *b = slurp("tests/fixtures/proc/stat.hostile_comm", &len);
    assert_int_equal(proc_parse_stat(b, len, &st, &e), 0);
    /* comm holds a space and a ')': fields are counted from the last ')'. */
    assert_string_equal(st.comm, "my app) x");
    assert_int_equal(st.state, 'S');
    assert_int_equal(st.ppid, 4200);
    assert_int_equal(st.starttime, 987654321ULL);
    assert_int_equal(st.exec_marks[0], 1);
    assert_int_equal(st.exec_marks[3], 0);
    b = slurp("tests/fixtures/proc/stat.host", &len);
    assert_int_equal(proc_parse_stat(b, len, &st, &e), 0);
    assert_int_equal(st.starttime, 1112643);
    /* startcode, startstack, arg_start, env_start */
    assert_int_equal(st.exec_marks[0], 94672855957504ULL);
    assert_int_equal(st.exec_marks[1], 140720802091312ULL);
    assert_int_equal(st.exec_marks[2], 140720802097626ULL);
    assert_int_equal(st.exec_marks[3], 140720802097646ULL);
}

static void test_stat_malformed(void **state)
{
    (void)state;
    struct proc_stat st;
    struct cla_error e = {0};
    const char *bad[] = {
        "",
        "1 comm S 0",
        "1 (comm S 0 1 2",
        "1 (comm) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18",   /* no field 22 */
        "1 (comm) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x", /* starttime not a number */
        "1 (comm) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 9",
        "1 (comm) S -1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 9",
        "1 (comm) S 1  3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 9",
        "1 (comm) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99999999999999999999999",
        "1 (aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa) S 1",
        /* the optional fields, when present, are numbers too */
        "1 (comm) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 9 23 24 25 -26",
        "1 (comm) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 9 23 24 25 26  28",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(proc_parse_stat(bad[i], strlen(bad[i]), &st, &e), -EPROTO);
    const char *ok = "1 (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 9";
    assert_int_equal(proc_parse_stat(ok, strlen(ok), &st, &e), 0);
    assert_int_equal(st.starttime, 9);
    assert_int_equal(st.exec_marks[0], 0);
    /* Up to arg_start only (an older kernel): what is there is read, the rest stays 0. */
    const char *part = "1 (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 9 23 24 25 26 27 28 "
                       "29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48\n";
    assert_int_equal(proc_parse_stat(part, strlen(part), &st, &e), 0);
    assert_int_equal(st.exec_marks[0], 26);
    assert_int_equal(st.exec_marks[1], 28);
    assert_int_equal(st.exec_marks[2], 48);
    assert_int_equal(st.exec_marks[3], 0);
    const char *esc = "1 (\x1b[2J) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 9";
    assert_int_equal(proc_parse_stat(esc, strlen(esc), &st, &e), 0);
    /* comm is kept as the process set it (for --match-comm); it is rendered where shown. */
    assert_string_equal(st.comm, "\x1b[2J");
    const char nul[] = "1 (a\0b) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 9";
    assert_int_equal(proc_parse_stat(nul, sizeof(nul) - 1, &st, &e), -EPROTO);
}

static void test_status_fixtures(void **state)
{
    (void)state;
    size_t len;
    struct proc_status st;
    struct cla_error e = {0};
    char *b = slurp("tests/fixtures/proc/status.container", &len);
    assert_int_equal(proc_parse_status(b, len, &st, &e), 0);
    assert_true(st.have_nspid);
    assert_int_equal(st.nspid, 1);
    assert_int_equal(st.nspid_levels, 2);
    assert_int_equal(st.uid[1], 1000);
    assert_int_equal(st.gid[3], 1000);
    b = slurp("tests/fixtures/proc/status.host", &len);
    assert_int_equal(proc_parse_status(b, len, &st, &e), 0);
}

static void test_status_malformed(void **state)
{
    (void)state;
    struct proc_status st;
    struct cla_error e = {0};
    const char *bad[] = {
        "Name:\tx\n",
        "Uid:\t1\t2\t3\t4\n",                      /* no Gid */
        "Uid:\t1\t2\t3\nGid:\t1\t2\t3\t4\n",       /* 3 ids */
        "Uid:\t1\t2\t3\t4\t5\nGid:\t1\t2\t3\t4\n", /* 5 ids */
        "Uid:\t1\tx\t3\t4\nGid:\t1\t2\t3\t4\n",
        "Uid:\t1\t2\t3\t4\nGid:\t1\t2\t3\t4\nNSpid:\t\n",
        "Uid:\t1\t2\t3\t4\nGid:\t1\t2\t3\t4\nNSpid:\t5\t0\n",
        "Uid:\t1\t2\t3\t4294967295\nGid:\t1\t2\t3\t4\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(proc_parse_status(bad[i], strlen(bad[i]), &st, &e), -EPROTO);
    const char *nons = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0";
    assert_int_equal(proc_parse_status(nons, strlen(nons), &st, &e), 0);
    assert_false(st.have_nspid);
}

static void test_status_caps_groups(void **state)
{
    (void)state;
    struct proc_status st;
    struct cla_error e = {0};
    const char *ok = "Name:\tx\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
                     "Groups:\t4 27 3000 4294967294 \nCapInh:\t0000000000000000\n"
                     "CapPrm:\t000001ffffffffff\nCapEff:\t000001fffeffffff\n";
    assert_int_equal(proc_parse_status(ok, strlen(ok), &st, &e), 0);
    assert_true(st.have_cap_eff);
    assert_true(st.cap_eff == 0x000001fffeffffffULL);
    assert_int_equal(st.ngroups, 4);
    assert_int_equal(st.groups[0], 4);
    assert_int_equal(st.groups[2], 3000);
    assert_int_equal(st.groups[3], 4294967294u);
    assert_false(st.groups_truncated);

    /* The fixture's empty "Groups:\t " line; no CapEff line means no capability. */
    size_t len;
    char *b = slurp("tests/fixtures/proc/status.container", &len);
    assert_int_equal(proc_parse_status(b, len, &st, &e), 0);
    assert_int_equal(st.ngroups, 0);
    assert_false(st.have_cap_eff);
    assert_true(st.cap_eff == 0);

    /* More groups than the cap: the first PROC_GROUPS_MAX are kept, the rest noted. */
    char big[8192];
    size_t n = (size_t)snprintf(big, sizeof(big), "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t");
    for (int g = 0; g < PROC_GROUPS_MAX + 3; g++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "%d ", 100 + g);
    n += (size_t)snprintf(big + n, sizeof(big) - n, "\n");
    assert_int_equal(proc_parse_status(big, n, &st, &e), 0);
    assert_int_equal(st.ngroups, PROC_GROUPS_MAX);
    assert_int_equal(st.groups[PROC_GROUPS_MAX - 1], 100 + PROC_GROUPS_MAX - 1);
    assert_true(st.groups_truncated);

    /* A repeated line replaces the earlier one rather than adding to it. */
    const char *twice = "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t5 6\nGroups:\t7\n";
    assert_int_equal(proc_parse_status(twice, strlen(twice), &st, &e), 0);
    assert_int_equal(st.ngroups, 1);
    assert_int_equal(st.groups[0], 7);

    const char *bad[] = {
        "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nCapEff:\t1ff\n",                /* short */
        "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nCapEff:\t000001fffeffffffff\n", /* long */
        "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nCapEff:\t000001FFFEFFFFFF\n",   /* case */
        "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nCapEff:\t00000-fffeffffff\n",
        "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nCapEff:\t\n",
        "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t4 x\n",
        "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t4294967295\n",
        "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t-1\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e.code = 0;
        assert_int_equal(proc_parse_status(bad[i], strlen(bad[i]), &st, &e), -EPROTO);
        assert_int_equal(e.code, -EPROTO);
    }
}

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

static void test_ns_link(void **state)
{
    (void)state;
    uint64_t ino = 0;
    static const char ok[] = "mnt:[4026531841]";
    assert_int_equal(proc_ns_link_parse(ok, sizeof(ok) - 1, "mnt", &ino), 0);
    assert_int_equal(ino, 4026531841ULL);
    assert_int_equal(proc_ns_link_parse("pid:[7]", 7, "pid", &ino), 0);
    assert_int_equal(ino, 7);
    static const char *const bad[] = {
        "pid:[4026531841]", /* another type */
        "mnt:4026531841",   /* no brackets */
        "mnt:[]",
        "mnt:[0]",
        "mnt:[12x]",
        "mnt:[-1]",
        "mnt[1]",
        "mnt:[1",
        "mnt:[99999999999999999999999]", /* overflow */
        "mnt",
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ino = 99;
        assert_int_equal(proc_ns_link_parse(bad[i], strlen(bad[i]), "mnt", &ino), -EPROTO);
        assert_int_equal(ino, 99);
    }
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

static void test_socket_names(void **state)
{
    (void)state;
    pid_t pid;
    uint64_t key;
#define P(s) proc_socket_name_parse(s, strlen(s), &pid, &key)
    assert_int_equal(P("dotnet-diagnostic-1-123-socket"), 1);
    assert_int_equal(pid, 1);
    assert_int_equal(key, 123);
    assert_int_equal(P("dotnet-diagnostic-4242-0-socket"), 1);
    assert_int_equal(key, 0);
    assert_int_equal(P("dotnet-diagnostic-4242-18446744073709551615-socket"), 1);
    assert_int_equal(P("dotnet-diagnostic-4242-18446744073709551616-socket"), 0);
    assert_int_equal(P("dotnet-diagnostic-dsrouter-4242-1-socket"), 0);
    assert_int_equal(P("dotnet-diagnostic-042-1-socket"), 0);
    assert_int_equal(P("dotnet-diagnostic-42-01-socket"), 0);
    assert_int_equal(P("dotnet-diagnostic-0-1-socket"), 0);
    assert_int_equal(P("dotnet-diagnostic--1-socket"), 0);
    assert_int_equal(P("dotnet-diagnostic-1--socket"), 0);
    assert_int_equal(P("dotnet-diagnostic-1-2-socketx"), 0);
    assert_int_equal(P("dotnet-diagnostic-1-2-3-socket"), 0);
    assert_int_equal(P("dotnet-diagnostic-99999999999-2-socket"), 0);
    assert_int_equal(P("dotnet-diagnostic--socket"), 0);
#undef P
}

static void test_mountinfo(void **state)
{
    (void)state;
    size_t len, n;
    struct proc_mount *m;
    struct cla_error e = {0};
    char *b = slurp("tests/fixtures/proc/mountinfo.container", &len);
    assert_int_equal(proc_parse_mountinfo(b, len, &m, &n, &e), 0);
    assert_int_equal(n, 8);
    assert_true(m[0].read_only);
    assert_string_equal(m[2].mount_point, "/tmp");
    assert_true(m[2].noexec);
    assert_false(m[2].read_only);
    assert_true(m[3].read_only); /* read-only superblock under a rw mount */
    assert_string_equal(m[5].mount_point, "/my dir");
    assert_string_equal(m[5].fstype, "tmpfs");
    assert_ptr_equal(proc_mount_for_path(m, n, "/tmp/"), &m[2]);
    assert_ptr_equal(proc_mount_for_path(m, n, "/tmp/exec/x.so"), &m[6]);
    assert_ptr_equal(proc_mount_for_path(m, n, "/tmpx/"), &m[0]);
    assert_ptr_equal(proc_mount_for_path(m, n, "/"), &m[0]);
    /* Line 8 is stacked on "/" after the process's root was set: invisible to it. */
    assert_ptr_equal(proc_mount_for_path(m, n, "/etc/x"), &m[0]);
    assert_ptr_equal(proc_mount_for_path(m, 0, "/"), NULL);
    free(m);
    b = slurp("tests/fixtures/proc/mountinfo.host", &len);
    assert_int_equal(proc_parse_mountinfo(b, len, &m, &n, &e), 0);
    assert_true(n > 0);
    free(m);
}

static void test_mountinfo_malformed(void **state)
{
    (void)state;
    struct proc_mount *m;
    size_t n;
    struct cla_error e = {0};
    const char *bad[] = {
        "1 2 0:1 / / rw - ext4\n",                 /* no source */
        "1 2 0:1 / / rw master:1\n",               /* no separator */
        "1 2 0:1 / rel rw - ext4 /dev/x rw\n",     /* relative mount point */
        "1 2 0:1 / /a\\09 rw - ext4 /dev/x rw\n",  /* bad escape */
        "1 2 0:1 / /a\\000 rw - ext4 /dev/x rw\n", /* NUL escape */
        "1 2\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(proc_parse_mountinfo(bad[i], strlen(bad[i]), &m, &n, &e), -EPROTO);
    assert_int_equal(proc_parse_mountinfo("", 0, &m, &n, &e), 0);
    assert_int_equal(n, 0);
    free(m);
}

static void test_maps(void **state)
{
    (void)state;
    static const char glibc[] =
        "7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
        "7f02-7f03 r-xp 00000000 00:27 5                          /tmp/libclrprobe-1f2e.so\n"
        "7f04-7f05 rw-p 00000000 00:00 0 \n";
    static const char musl[] = "55-56 r-xp 0 08:01 9 /lib/ld-musl-x86_64.so.1\n";
    assert_int_equal(proc_maps_libc(glibc, sizeof(glibc) - 1), 2);
    assert_int_equal(proc_maps_libc(musl, sizeof(musl) - 1), 1);
    assert_int_equal(proc_maps_libc("", 0), 0);
    assert_int_equal(proc_maps_has(glibc, sizeof(glibc) - 1, "libclrprobe-1f2e.so"), 1);
    assert_int_equal(proc_maps_has(glibc, sizeof(glibc) - 1, "clrprobe-1f2e.so"), 0);
    assert_int_equal(proc_maps_has(glibc, sizeof(glibc) - 1, "other.so"), 0);

    /* Mapped libraries, once each, deleted ones and non-libraries skipped, capped. */
    static const char many[] =
        "1-2 r-xp 0 08:01 1 /usr/share/dotnet/shared/x/libcoreclr.so\n"
        "3-4 r--p 0 08:01 1 /usr/share/dotnet/shared/x/libcoreclr.so\n"
        "5-6 r-xp 0 08:01 2 /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30\n"
        "7-8 r-xp 0 08:01 3 /tmp/old.so (deleted)\n"
        "9-a r--p 0 08:01 4 /usr/share/dotnet/shared/x/System.Private.CoreLib.dll\n"
        "b-c rw-p 0 00:00 0 [heap]\n";
    char libs[256];
    assert_int_equal(proc_maps_libraries(many, sizeof(many) - 1, libs, sizeof(libs), 8), 2);
    assert_string_equal(libs, "/usr/share/dotnet/shared/x/libcoreclr.so");
    assert_string_equal(libs + strlen(libs) + 1, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30");
    assert_int_equal(proc_maps_libraries(many, sizeof(many) - 1, libs, sizeof(libs), 1), 1);
    assert_int_equal(proc_maps_libraries(many, sizeof(many) - 1, libs, 20, 8), 0);
}

/* Under qemu-user (binfmt_misc), exe is the emulator and maps lists the guest's runtime: the
 * RID fallback reads libcoreclr.so's ELF header. Only that exact name counts. */
static void test_maps_runtime_library(void **state)
{
    (void)state;
    static const char qemu[] =
        "4000-5000 r-xp 0 08:01 1 /usr/libexec/qemu-binfmt/aarch64-binfmt-P\n"
        "5000-6000 r-xp 0 08:01 2 /usr/share/dotnet/shared/x/libnotcoreclr.so\n"
        "6000-7000 r-xp 0 08:01 3 /usr/share/dotnet/shared/x/libcoreclr.so.bak\n"
        "7000-8000 r-xp 0 08:01 4 /usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.1/"
        "libcoreclr.so\n"
        "8000-9000 r-xp 0 08:01 5 /opt/other/libcoreclr.so\n";
    char lib[128];
    assert_int_equal(proc_maps_runtime_library(qemu, sizeof(qemu) - 1, lib, sizeof(lib)), 1);
    assert_string_equal(lib, "/usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.1/libcoreclr.so");
    assert_int_equal(proc_maps_runtime_library(qemu, sizeof(qemu) - 1, lib, 20), 0);
    static const char none[] = "1-2 r-xp 0 08:01 1 /usr/bin/dotnet\n"
                               "3-4 r-xp 0 08:01 2 libcoreclr.so\n"
                               "5-6 r-xp 0 08:01 3 /libcoreclr.so (deleted)\n";
    assert_int_equal(proc_maps_runtime_library(none, sizeof(none) - 1, lib, sizeof(lib)), 0);
    assert_int_equal(proc_maps_runtime_library("", 0, lib, sizeof(lib)), 0);
}

/* The incremental maps scan: whole lines only, a cut line waits, a match in the last line
 * without its newline counts at the end, and it takes no more than the room it has. */
static void test_maps_scan_feed(void **state)
{
    (void)state;
    static struct proc_maps_scan s;
    static const char a[] = "1-2 r--p 0 0:0 1 /usr/lib/liba.so\n1-2 r-xp 0 0:0 2 /tmp/libp";
    static const char b[] = "robe.so\n";
    memset(&s, 0, sizeof(s));
    memcpy(s.buf, a, sizeof(a) - 1);
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(a) - 1, "libprobe.so"), 0); /* cut: waits */
    assert_int_equal(s.have, strlen(strchr(a, '\n') + 1));
    memset(&s, 0, sizeof(s));
    memcpy(s.buf, a, sizeof(a) - 1);
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(a) - 1, "libprobe.so"), 0);
    memcpy(s.buf + s.have, b, sizeof(b) - 1);
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(b) - 1, "libprobe.so"), 1);
    memset(&s, 0, sizeof(s));
    memcpy(s.buf, a, sizeof(a) - 1);
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(a) - 1, "libp"), 0);
    assert_int_equal(proc_maps_scan_feed(&s, 0, "libp"), 1); /* the end: the last line counts */
    assert_int_equal(s.have, 0);
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(s.buf) + 1, "x"), -EINVAL);
    memset(s.buf, 'a', sizeof(s.buf));
    assert_int_equal(proc_maps_scan_feed(&s, sizeof(s.buf), "x"), -EPROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat_fixtures),        cmocka_unit_test(test_stat_malformed),
        cmocka_unit_test(test_status_fixtures),      cmocka_unit_test(test_status_malformed),
        cmocka_unit_test(test_status_caps_groups),   cmocka_unit_test(test_environ),
        cmocka_unit_test(test_environ_many),         cmocka_unit_test(test_ns_link),
        cmocka_unit_test(test_diagnostics_off),      cmocka_unit_test(test_tmpdir),
        cmocka_unit_test(test_socket_names),         cmocka_unit_test(test_mountinfo),
        cmocka_unit_test(test_mountinfo_malformed),  cmocka_unit_test(test_maps),
        cmocka_unit_test(test_maps_runtime_library), cmocka_unit_test(test_maps_scan_feed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
