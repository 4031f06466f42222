/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "target/proc_parse.h"

static void test_stat_fixtures(void **state)
{
    (void)state;
    size_t len;
    struct proc_stat st;
    char *b = slurp("tests/fixtures/proc/stat.hostile_comm", &len);
    assert_int_equal(proc_parse_stat(b, len, &st, NULL), 0);
    /* comm holds a space and a ')': fields are counted from the last ')'. */
    assert_string_equal(st.comm, "my app) x");
    assert_int_equal(st.state, 'S');
    assert_int_equal(st.ppid, 4200);
    assert_int_equal(st.starttime, 987654321ULL);
    assert_int_equal(st.exec_marks[0], 1);
    assert_int_equal(st.exec_marks[3], 0);
    b = slurp("tests/fixtures/proc/stat.host", &len);
    assert_int_equal(proc_parse_stat(b, len, &st, NULL), 0);
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
    char *b = slurp("tests/fixtures/proc/status.container", &len);
    assert_int_equal(proc_parse_status(b, len, &st, NULL), 0);
    assert_true(st.have_nspid);
    assert_int_equal(st.nspid, 1);
    assert_int_equal(st.nspid_levels, 2);
    assert_int_equal(st.uid[1], 1000);
    assert_int_equal(st.gid[3], 1000);
    assert_true(st.have_tgid);
    assert_true(st.tgid > 0);
    b = slurp("tests/fixtures/proc/status.host", &len);
    assert_int_equal(proc_parse_status(b, len, &st, NULL), 0);
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
        "Tgid:\t0\nUid:\t1\t2\t3\t4\nGid:\t1\t2\t3\t4\n",   /* no pid is 0 */
        "Tgid:\t7 8\nUid:\t1\t2\t3\t4\nGid:\t1\t2\t3\t4\n", /* two */
        "Tgid:\t\nUid:\t1\t2\t3\t4\nGid:\t1\t2\t3\t4\n",    /* none */
        "Tgid:\t-7\nUid:\t1\t2\t3\t4\nGid:\t1\t2\t3\t4\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(proc_parse_status(bad[i], strlen(bad[i]), &st, &e), -EPROTO);
    const char *nons = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0";
    assert_int_equal(proc_parse_status(nons, strlen(nons), &st, &e), 0);
    assert_false(st.have_nspid);
    assert_false(st.have_tgid);
    const char *thread = "Tgid:\t4242\nPid:\t4250\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
    assert_int_equal(proc_parse_status(thread, strlen(thread), &st, &e), 0);
    assert_true(st.have_tgid);
    assert_int_equal(st.tgid, 4242);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat_fixtures),      cmocka_unit_test(test_stat_malformed),
        cmocka_unit_test(test_status_fixtures),    cmocka_unit_test(test_status_malformed),
        cmocka_unit_test(test_status_caps_groups), cmocka_unit_test(test_ns_link),
        cmocka_unit_test(test_socket_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
