/* SPDX-License-Identifier: Apache-2.0 */
/*
 * result_json: the `-o json` documents read back with jansson. Each is one line, carries the
 * exit code it is given, names its outcome as docs/exit-codes.md does, leaves out what was not
 * learnt, and renders a target's strings (an escape sequence or invalid UTF-8 in a command line
 * must neither reach a terminal through `jq -r` nor lose the whole result).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "flow/attach.h"
#include "flow/ps.h"
#include "report/result_json.h"

/* Parses `s` (freeing it), checking it is one line of one JSON object. */
static json_t *parse(char *s)
{
    assert_non_null(s);
    assert_null(strchr(s, '\n'));
    json_error_t je;
    json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        fail_msg("not JSON (%s): %s", je.text, s);
    free(s);
    assert_true(json_is_object(o));
    return o;
}

static const char *str(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v))
        fail_msg("\"%s\" is not a string", k);
    return json_string_value(v);
}

static json_int_t num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v))
        fail_msg("\"%s\" is not an integer", k);
    return json_integer_value(v);
}

static const struct ipc_guid clsid = {{0x78, 0x56, 0x34, 0x12, 0xbc, 0x9a, 0xf0, 0xde, 0x11, 0x22,
                                       0x33, 0x44, 0x55, 0x66, 0x77, 0x88}};

/* A startup load: its own outcome, whether and when the app was resumed, the --env names. */
static void test_startup_loaded(void **state)
{
    (void)state;
    static struct attach_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = ATTACH_STARTUP_LOADED;
    r.pid = 9;
    r.startup_load = r.mapped = r.resume_owed = r.resumed = true;
    r.resumed_after_ms = 33;
    r.env_count = r.env_sent = 1;
    snprintf(r.env[0], sizeof(r.env[0]), "OTEL_A");
    json_t *o = parse(result_attach_json(&r, "p.so", &clsid, 0));
    assert_string_equal(str(o, "outcome"), "loaded_at_startup");
    assert_string_equal(str(o, "load"), "startup");
    assert_true(json_is_true(json_object_get(o, "resumed")));
    assert_true(json_is_true(json_object_get(o, "mapped")));
    assert_int_equal(num(o, "resumed_after_ms"), 33);
    assert_int_equal(num(o, "env_sent"), 1);
    json_t *env = json_object_get(o, "env");
    assert_int_equal(json_array_size(env), 1);
    assert_string_equal(json_string_value(json_array_get(env, 0)), "OTEL_A");
    assert_null(json_object_get(o, "error"));
    json_decref(o);
    /* A failed one says so, not resumed, and gives its error. */
    r.outcome = ATTACH_STARTUP_FAILED;
    r.resumed = r.mapped = false;
    snprintf(r.error.msg, sizeof(r.error.msg), "never mapped");
    o = parse(result_attach_json(&r, "p.so", &clsid, 7));
    assert_string_equal(str(o, "outcome"), "startup_load_failed");
    assert_true(json_is_false(json_object_get(o, "resumed")));
    assert_true(json_is_false(json_object_get(o, "mapped")));
    assert_null(json_object_get(o, "resumed_after_ms"));
    assert_string_equal(str(o, "error"), "never mapped");
    json_decref(o);
    /* Nothing owed: no resumed key at all. */
    r.resume_owed = false;
    r.env_count = 0;
    o = parse(result_attach_json(&r, "p.so", &clsid, 7));
    assert_null(json_object_get(o, "resumed"));
    assert_null(json_object_get(o, "env"));
    json_decref(o);
}

static void test_attach_ok(void **state)
{
    (void)state;
    static struct attach_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = ATTACH_OK;
    r.pid = 4242;
    r.nspid = 7;
    r.uid = 1000;
    r.starttime = 123456;
    snprintf(r.command_line, sizeof(r.command_line), "dotnet app.dll");
    snprintf(r.tmpdir, sizeof(r.tmpdir), "/tmp");
    snprintf(r.socket_name, sizeof(r.socket_name), "dotnet-diagnostic-7-123456-socket");
    r.have_runtime = true;
    snprintf(r.runtime_version, sizeof(r.runtime_version), "10.0.1");
    snprintf(r.runtime_rid, sizeof(r.runtime_rid), "linux-x64");
    snprintf(r.os_arch, sizeof(r.os_arch), "Linux x64");
    snprintf(r.target_rid, sizeof(r.target_rid), "linux-x64");
    r.rid_source = attach_rid_sources[1];
    snprintf(r.delivered_path, sizeof(r.delivered_path), "/tmp/clrprobe-3f2a.so");
    snprintf(r.sha256, sizeof(r.sha256), "%064d", 0);
    r.mapped = true;
    r.have_hresult = true;
    r.hresult = 0;
    r.duration_ms = 35;
    r.answer_ms = 4;
    r.settle_wait_ms = 30;
    /* The error of an earlier step that was recovered from is not shown for a success. */
    snprintf(r.error.msg, sizeof(r.error.msg), "stale");

    json_t *o = parse(result_attach_json(&r, "/opt/prof/libclrprobe.so", &clsid, 0));
    assert_string_equal(str(o, "command"), "attach");
    assert_string_equal(str(o, "outcome"), "attached");
    assert_int_equal(num(o, "exit_code"), 0);
    assert_int_equal(num(o, "pid"), 4242);
    assert_int_equal(num(o, "ns_pid"), 7);
    assert_int_equal(num(o, "uid"), 1000);
    assert_int_equal(num(o, "start_time"), 123456);
    assert_string_equal(str(o, "command_line"), "dotnet app.dll");
    assert_string_equal(str(o, "socket"), "dotnet-diagnostic-7-123456-socket");
    json_t *rt = json_object_get(o, "runtime");
    assert_string_equal(str(rt, "version"), "10.0.1");
    assert_string_equal(str(rt, "rid"), "linux-x64");
    assert_string_equal(str(o, "profiler"), "/opt/prof/libclrprobe.so");
    assert_string_equal(str(o, "rid_source"), "runtime");
    assert_string_equal(str(o, "clsid"), "{12345678-9ABC-DEF0-1122-334455667788}");
    assert_string_equal(str(o, "delivered_path"), "/tmp/clrprobe-3f2a.so");
    assert_null(json_object_get(o, "delivered_dir"));
    assert_true(json_is_false(json_object_get(o, "reused")));
    assert_null(json_object_get(o, "removed"));
    assert_true(json_is_true(json_object_get(o, "mapped")));
    assert_string_equal(str(o, "hresult"), "0x00000000");
    assert_null(json_object_get(o, "error"));
    assert_null(json_object_get(o, "next_step"));
    assert_int_equal(num(o, "duration_ms"), 35);
    /* took, split: the runtime's answer, then the settle wait */
    assert_int_equal(num(o, "answer_ms"), 4);
    assert_int_equal(num(o, "settle_wait_ms"), 30);
    json_decref(o);
}

/* A runtime that connected to --listen: ns_pid is what it advertised, uid its socket peer's, and
 * "pid" is absent when it has none in clrattach's PID namespace (never 0). */
static void test_listen_pid(void **state)
{
    (void)state;
    static struct attach_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = ATTACH_STARTUP_LOADED;
    r.listen = true;
    r.nspid = 7;
    r.uid = 1654;
    json_t *o = parse(result_attach_json(&r, "p.so", &clsid, 0));
    assert_string_equal(str(o, "outcome"), "loaded_at_startup");
    assert_null(json_object_get(o, "pid"));
    assert_int_equal(num(o, "ns_pid"), 7);
    assert_int_equal(num(o, "uid"), 1654);
    assert_true(json_is_true(json_object_get(o, "listen")));
    assert_null(json_object_get(o, "start_time"));
    json_decref(o);
    r.pid = 4242;
    o = parse(result_attach_json(&r, "p.so", &clsid, 0));
    assert_int_equal(num(o, "pid"), 4242);
    assert_int_equal(num(o, "ns_pid"), 7);
    json_decref(o);
    /* Not a listening result: pid is always there, and no "listen". */
    r.listen = false;
    r.pid = 0;
    o = parse(result_attach_json(&r, "p.so", &clsid, 0));
    assert_int_equal(num(o, "pid"), 0);
    assert_null(json_object_get(o, "listen"));
    json_decref(o);
}

static void test_attach_failure(void **state)
{
    (void)state;
    static struct attach_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = ATTACH_ALREADY_ACTIVE;
    r.pid = 9;
    r.have_hresult = true;
    r.hresult = 0x8013136A;
    snprintf(r.holder, sizeof(r.holder), "/tmp/other.so");
    snprintf(r.error.msg, sizeof(r.error.msg), "a profiler is already loaded");
    snprintf(r.error.hint, sizeof(r.error.hint), "restart the app");

    /* A required Event that failed: the document carries the code the process ends with. */
    json_t *o = parse(result_attach_json(&r, "p.so", &clsid, 10));
    assert_string_equal(str(o, "outcome"), "already_active");
    assert_int_equal(num(o, "exit_code"), 10);
    assert_string_equal(str(o, "hresult"), "0x8013136A");
    assert_string_equal(str(o, "hresult_name"), "CORPROF_E_PROFILER_ALREADY_ACTIVE");
    assert_string_equal(str(o, "holder"), "/tmp/other.so");
    assert_string_equal(str(o, "error"), "a profiler is already loaded");
    assert_string_equal(str(o, "next_step"), "restart the app");
    assert_true(json_is_false(json_object_get(o, "mapped")));
    /* Nothing was learnt about the process: no fields that would read as zeros. */
    assert_null(json_object_get(o, "ns_pid"));
    assert_null(json_object_get(o, "uid"));
    assert_null(json_object_get(o, "gid"));
    assert_null(json_object_get(o, "runtime"));
    assert_null(json_object_get(o, "delivered_path"));
    assert_null(json_object_get(o, "target_rid"));
    json_decref(o);

    /* A failure without a hint has no next_step; one before any answer has no "mapped". */
    r.outcome = ATTACH_NOT_FOUND;
    r.have_hresult = false;
    r.error.hint[0] = '\0';
    o = parse(result_attach_json(&r, "p.so", &clsid, 4));
    assert_string_equal(str(o, "outcome"), "target_not_found");
    assert_null(json_object_get(o, "next_step"));
    assert_null(json_object_get(o, "mapped"));
    /* Nothing was sent: no split of the time into an answer and a wait. */
    assert_null(json_object_get(o, "answer_ms"));
    assert_null(json_object_get(o, "settle_wait_ms"));
    assert_null(json_object_get(o, "hresult"));
    json_decref(o);
}

static void test_target_strings_rendered(void **state)
{
    (void)state;
    static struct attach_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = ATTACH_PROTOCOL;
    r.starttime = 1;
    /* An escape sequence, a bidi override and a byte that is not UTF-8. */
    snprintf(r.command_line, sizeof(r.command_line), "app \x1b[31mred\xe2\x80\xae \xff end");
    snprintf(r.error.msg, sizeof(r.error.msg), "bad\x07");
    json_t *o = parse(result_attach_json(&r, "p.so", &clsid, 9));
    const char *cl = str(o, "command_line");
    assert_string_equal(cl, "app \\x1b[31mred\\u{202e} \\xff end");
    assert_string_equal(str(o, "error"), "bad\\x07");
    json_decref(o);
}

static void test_ps(void **state)
{
    (void)state;
    struct ps_entry list[2];
    memset(list, 0, sizeof(list));
    list[0].pid = 100;
    list[0].nspid = 1;
    list[0].uid = 0;
    list[0].gid = 1655;
    snprintf(list[0].comm, sizeof(list[0].comm), "dotnet");
    snprintf(list[0].socket_name, sizeof(list[0].socket_name), "dotnet-diagnostic-1-2-socket");
    list[0].state = "ready";
    snprintf(list[0].runtime_version, sizeof(list[0].runtime_version), "8.0.11");
    snprintf(list[0].arch, sizeof(list[0].arch), "x64");
    /* Refused: no namespace pid or uid (0 would read as root), a detail saying why. */
    list[1].pid = 200;
    list[1].state = "refused";
    snprintf(list[1].detail, sizeof(list[1].detail), "status: Uid line malformed");

    json_t *o = parse(result_ps_json(&list[0]));
    assert_int_equal(num(o, "pid"), 100);
    assert_int_equal(num(o, "ns_pid"), 1);
    assert_int_equal(num(o, "uid"), 0);
    assert_int_equal(num(o, "gid"), 1655);
    assert_string_equal(str(o, "state"), "ready");
    assert_string_equal(str(json_object_get(o, "runtime"), "version"), "8.0.11");
    assert_null(json_object_get(o, "detail"));
    json_decref(o);

    o = parse(result_ps_json(&list[1]));
    assert_null(json_object_get(o, "ns_pid"));
    assert_null(json_object_get(o, "uid"));
    assert_null(json_object_get(o, "runtime"));
    assert_string_equal(str(o, "detail"), "status: Uid line malformed");
    json_decref(o);

    o = parse(result_ps_list_json(list, 2));
    assert_string_equal(str(o, "command"), "ps");
    json_t *a = json_object_get(o, "processes");
    assert_int_equal(json_array_size(a), 2);
    assert_int_equal(num(json_array_get(a, 1), "pid"), 200);
    json_decref(o);

    /* Nothing found: an empty list, still one document. */
    o = parse(result_ps_list_json(NULL, 0));
    assert_true(json_is_array(json_object_get(o, "processes")));
    assert_int_equal(json_array_size(json_object_get(o, "processes")), 0);
    json_decref(o);
}

static void test_error_document(void **state)
{
    (void)state;
    json_t *o = parse(result_error_json("watch", ATTACH_USAGE, "unknown option --x", "see --help"));
    assert_string_equal(str(o, "command"), "watch");
    assert_string_equal(str(o, "outcome"), "usage_error");
    assert_int_equal(num(o, "exit_code"), 2);
    assert_string_equal(str(o, "error"), "unknown option --x");
    assert_string_equal(str(o, "next_step"), "see --help");
    json_decref(o);

    o = parse(result_error_json("attach", ATTACH_INTERNAL, "seccomp", NULL));
    assert_int_equal(num(o, "exit_code"), 1);
    assert_null(json_object_get(o, "next_step"));
    json_decref(o);
    o = parse(result_error_json("attach", ATTACH_INTERNAL, "seccomp", ""));
    assert_null(json_object_get(o, "next_step"));
    json_decref(o);

    /* Every outcome has its documented name and code. */
    for (int i = 0; i <= ATTACH_OUTCOME_LAST; i++) {
        o = parse(result_error_json("attach", (enum attach_outcome)i, "m", NULL));
        assert_string_equal(str(o, "outcome"), attach_outcome_name((enum attach_outcome)i));
        assert_int_equal(num(o, "exit_code"), attach_outcome_exit_code((enum attach_outcome)i));
        json_decref(o);
    }
}

/* A home's delivery says so ("layout":"home"): its entry lies in the variant's folder below the
 * delivered directory; a bundle's directory build or a plain directory does not. */
static void test_home_layout(void **state)
{
    (void)state;
    /* Zeroed: ATTACH_OK of a profiler; a result is too large for the stack of a test. */
    struct attach_result *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    snprintf(r->delivered_dir, sizeof(r->delivered_dir), "/tmp/Native-77bb");
    snprintf(r->delivered_path, sizeof(r->delivered_path), "/tmp/Native-77bb/linux-x64/Native.so");
    snprintf(r->variant, sizeof(r->variant), "linux-x64");
    assert_true(result_delivered_home(r));
    json_t *o = parse(result_attach_json(r, "/p", &clsid, 0));
    assert_string_equal(str(o, "layout"), "home");
    json_decref(o);
    /* A bundle's directory build: the entry at the top of the delivered directory. */
    snprintf(r->delivered_path, sizeof(r->delivered_path), "/tmp/Native-77bb/Native.so");
    assert_false(result_delivered_home(r));
    snprintf(r->delivered_path, sizeof(r->delivered_path), "/tmp/Native-77bb/linux-x64x/Native.so");
    assert_false(result_delivered_home(r));
    o = parse(result_attach_json(r, "/p", &clsid, 0));
    assert_null(json_object_get(o, "layout"));
    json_decref(o);
    /* No variant (a plain directory), or no directory (a file). */
    snprintf(r->delivered_path, sizeof(r->delivered_path), "/tmp/Native-77bb/linux-x64/Native.so");
    r->variant[0] = '\0';
    assert_false(result_delivered_home(r));
    snprintf(r->variant, sizeof(r->variant), "linux-x64");
    r->delivered_dir[0] = '\0';
    assert_false(result_delivered_home(r));
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attach_ok),
        cmocka_unit_test(test_listen_pid),
        cmocka_unit_test(test_attach_failure),
        cmocka_unit_test(test_target_strings_rendered),
        cmocka_unit_test(test_ps),
        cmocka_unit_test(test_error_document),
        cmocka_unit_test(test_startup_loaded),
        cmocka_unit_test(test_home_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
