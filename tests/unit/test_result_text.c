/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/hresult.h"
#include "report/result_text.h"
#include "report/result_json.h"

static struct ipc_guid clsid(void)
{
    struct ipc_guid g;
    ipc_guid_parse("{5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}", &g);
    return g;
}

static const struct timespec when = {1790000000, 123456789};

static void test_attached(void **state)
{
    (void)state;
    struct attach_result r = {
        .outcome = ATTACH_OK, .pid = 4242, .nspid = 1, .uid = 1000, .duration_ms = 7};
    snprintf(r.runtime_version, sizeof(r.runtime_version), "10.0.12");
    snprintf(r.delivered_path, sizeof(r.delivered_path), "/tmp/libclrprobe-0123.so");
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    result_text_event(&r, "/opt/p/libclrprobe.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerAttached");
    assert_string_equal(ev.spec.type, "Normal");
    assert_string_equal(ev.spec.action, "AttachProfiler");
    assert_non_null(strstr(ev.note, "libclrprobe.so {5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}"));
    assert_non_null(strstr(
        ev.note,
        ".NET pid 1 (pid 4242 as seen from clrattach's PID namespace, uid 1000, .NET 10.0.12)"));
    assert_non_null(strstr(ev.note, "/tmp/libclrprobe-0123.so"));
    /* 4242 is clrattach's own view of the pid, not necessarily the node's. */
    assert_null(strstr(ev.note, "node-side"));
    assert_int_equal(ev.spec.event_time.tv_nsec, 123456789);
}

static void test_already_active_is_normal(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_ALREADY_ACTIVE,
                              .pid = 5,
                              .nspid = 5,
                              .have_hresult = true,
                              .hresult = 0x8013136A};
    snprintf(r.error.msg, sizeof(r.error.msg), "a profiler is loaded");
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    result_text_event(&r, "p.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerAlreadyActive");
    assert_string_equal(ev.spec.type, "Normal");
    assert_non_null(strstr(ev.note, "CORPROF_E_PROFILER_ALREADY_ACTIVE 0x8013136A"));
}

static void test_failure_is_warning_with_next_step(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_LOAD_FAILED,
                              .pid = 9,
                              .nspid = 1,
                              .have_hresult = true,
                              .hresult = 0x8007007E};
    snprintf(r.error.msg, sizeof(r.error.msg), "the runtime could not load it");
    snprintf(r.error.hint, sizeof(r.error.hint), "check the libc");
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    result_text_event(&r, "p.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerAttachFailed");
    assert_string_equal(ev.spec.type, "Warning");
    assert_non_null(strstr(ev.note, "load_failed"));
    assert_non_null(strstr(ev.note, "0x8007007E"));
    assert_non_null(strstr(ev.note, "Next step: check the libc"));
}

/* A profiler that killed the app is a Warning of its own reason, not a plain load failure. */
static void test_target_died_has_its_reason(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_TARGET_DIED,
                              .pid = 9,
                              .nspid = 1,
                              .have_hresult = true,
                              .hresult = 0x80131375,
                              .died = true,
                              .died_after_ms = 42};
    snprintf(r.error.msg, sizeof(r.error.msg), "the app died 42 ms later");
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    result_text_event(&r, "p.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerTargetDied");
    assert_string_equal(ev.spec.type, "Warning");
    assert_non_null(strstr(ev.note, "target_died"));
    assert_non_null(strstr(ev.note, "42 ms"));
}

static void test_note_cut_to_1024_on_utf8(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_OK, .pid = 1, .nspid = 1};
    /* A delivered path of 2-byte characters, longer than the 1024-byte note: the cut must not
     * split a character. */
    size_t o = 0;
    r.delivered_path[o++] = '/';
    while (o + 2 < 1500) {
        r.delivered_path[o++] = (char)0xC3;
        r.delivered_path[o++] = (char)0xA9;
    }
    r.delivered_path[o] = '\0';
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    result_text_event(&r, "p.so", &g, &when, &ev);
    size_t n = strlen(ev.note);
    assert_true(n <= 1024 && n > 1000);
    /* Every 0xC3 lead byte is followed by its continuation byte. */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)ev.note[i] == 0xC3)
            assert_int_equal((unsigned char)ev.note[i + 1], 0xA9);
}

static void test_termination_message(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_OK, .pid = 3};
    char out[RESULT_TEXT_TERMINATION_MAX + 1];
    assert_int_equal(result_text_termination(&r, "{\"a\":1}", 0, out), 7);
    assert_string_equal(out, "{\"a\":1}");
    static char big[6000];
    memset(big, 'x', sizeof(big) - 1);
    r.outcome = ATTACH_DELIVERY;
    snprintf(r.error.msg, sizeof(r.error.msg), "no directory");
    size_t n = result_text_termination(&r, big, 6, out);
    assert_true(n <= RESULT_TEXT_TERMINATION_MAX);
    assert_non_null(strstr(out, "outcome=delivery_failed exit_code=6 pid=3"));
    assert_non_null(strstr(out, "error=no directory"));
    /* The summary carries the code the process ends with, not the outcome's own. */
    r.outcome = ATTACH_OK;
    n = result_text_termination(&r, big, 10, out);
    assert_non_null(strstr(out, "outcome=attached exit_code=10 pid=3"));
}

/* A runtime that connected to --listen from a PID namespace clrattach cannot see: the pid it
 * advertised, and no node-side pid at all (SO_PEERCRED gave 0), in the Event and the summary. */
static void test_listen_no_node_pid(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_STARTUP_LOADED,
                              .listen = true,
                              .pid = 0,
                              .nspid = 7,
                              .uid = 1654,
                              .startup_load = true,
                              .resumed = true,
                              .resumed_after_ms = 12};
    snprintf(r.runtime_version, sizeof(r.runtime_version), "8.0.11");
    snprintf(r.delivered_path, sizeof(r.delivered_path), "/diag/p-0123/libclrprobe.so");
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    result_text_event(&r, "/opt/p/libclrprobe.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerLoadedAtStartup");
    assert_non_null(strstr(ev.note, "at startup into .NET pid 7 (the pid the runtime advertised, "
                                    "uid 1654, .NET 8.0.11), resumed after 12 ms"));
    assert_null(strstr(ev.note, "node-side"));
    assert_null(strstr(ev.note, "pid 0"));
    /* A pid seen through SO_PEERCRED (clrattach in an ancestor PID namespace) is named as such. */
    r.pid = 4242;
    result_text_event(&r, "/opt/p/libclrprobe.so", &g, &when, &ev);
    assert_non_null(strstr(ev.note, ".NET pid 7 (the pid the runtime advertised; pid 4242 as seen "
                                    "from clrattach's PID namespace, uid 1654"));
    assert_null(strstr(ev.note, "node-side"));
    r.pid = 0;
    r.outcome = ATTACH_OK;
    r.startup_load = false;
    result_text_event(&r, "/opt/p/libclrprobe.so", &g, &when, &ev);
    assert_non_null(strstr(ev.note, "to .NET pid 7 (the pid the runtime advertised, uid 1654"));
    assert_null(strstr(ev.note, "pid 0"));
    char out[RESULT_TEXT_TERMINATION_MAX + 1];
    static char big[6000];
    memset(big, 'x', sizeof(big) - 1);
    result_text_termination(&r, big, 0, out);
    assert_non_null(strstr(out, "outcome=attached exit_code=0 pid=- ns_pid=7 "));
    r.pid = 4242;
    result_text_termination(&r, big, 0, out);
    assert_non_null(strstr(out, "exit_code=0 pid=4242 ns_pid=7 "));
}

/* A failed required Event turns exit 0 into 10: the JSON says 10 (issue 15: it said 0). */
static void test_json_exit_code_is_the_process_code(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_OK, .pid = 3, .nspid = 1};
    struct ipc_guid g = clsid();
    char *js = result_attach_json(&r, "p.so", &g, 10);
    assert_non_null(js);
    assert_non_null(strstr(js, "\"outcome\":\"attached\",\"exit_code\":10,"));
    free(js);
    r.outcome = ATTACH_ALREADY_ACTIVE;
    js = result_attach_json(&r, "p.so", &g, 3);
    assert_non_null(strstr(js, "\"exit_code\":3,"));
    free(js);
}

/* Double punctuation: one of ".,;:!?" followed, after optional spaces, by another; an ellipsis
 * of exactly three periods inside a text ("OBJECT_ALLOCATED...)") is allowed. */
static const char *double_punctuation(const char *s)
{
    static const char punct[] = ".,;:!?";
    for (const char *p = s; *p; p++) {
        if (!strchr(punct, *p))
            continue;
        if (p[0] == '.' && p[1] == '.' && p[2] == '.' && p[3] != '.' && (p == s || p[-1] != '.')) {
            p += 2;
            continue;
        }
        const char *q = p + 1;
        while (*q == ' ')
            q++;
        if (*q && strchr(punct, *q))
            return p;
    }
    return NULL;
}

/* Every sentence of the note ends with one period, and the whole note is such sentences. */
static void assert_well_formed(const char *note)
{
    const char *bad = double_punctuation(note);
    if (bad)
        fail_msg("double punctuation at '%.30s' in: %s", bad, note);
    size_t n = strlen(note);
    assert_true(n > 0);
    if (note[n - 1] != '.')
        fail_msg("no closing period: %s", note);
    assert_null(strstr(note, "  "));
    assert_true(note[0] >= 'A' && note[0] <= 'Z');
}

static enum attach_outcome outcome_of_class(enum hresult_class cls)
{
    switch (cls) {
    case HRESULT_CLASS_ALREADY: return ATTACH_ALREADY_ACTIVE;
    case HRESULT_CLASS_NOT_READY: return ATTACH_NOT_READY;
    case HRESULT_CLASS_PROTOCOL: return ATTACH_PROTOCOL;
    default: return ATTACH_LOAD_FAILED;
    }
}

/* The note for every HRESULT the table knows, built from the texts lib/flow/attach_explain.c
 * puts in the error (message "the runtime answered NAME (0x...): <cause>", hint <next step>). */
static void test_note_every_hresult_well_formed(void **state)
{
    (void)state;
    size_t count, named_count;
    const struct hresult_info *t = hresult_table(&count);
    const struct hresult_info *named = hresult_win32_named(&named_count);
    struct ipc_guid g = clsid();
    for (size_t i = 0; i <= count + named_count; i++) {
        /* Then the Win32 codes known by name only; the last round: a code neither knows. */
        uint32_t code = i < count                 ? t[i].code
                        : i < count + named_count ? named[i - count].code
                                                  : 0x8badf00du;
        const struct hresult_info *hi = hresult_lookup(code);
        for (int env = 0; env < 2; env++) {
            struct attach_result r = {.outcome = outcome_of_class(hi->cls),
                                      .pid = 9,
                                      .nspid = 1,
                                      .have_hresult = true,
                                      .hresult = code};
            snprintf(r.error.msg, sizeof(r.error.msg), "the runtime answered %s (0x%08X): %s",
                     hi->name, code, hi->cause);
            if (env)
                snprintf(r.error.hint, sizeof(r.error.hint),
                         "%s is set in the target's environment: a profiler was loaded at "
                         "startup. %s",
                         "CORECLR_PROFILER", hi->next_step);
            else
                snprintf(r.error.hint, sizeof(r.error.hint), "%s", hi->next_step);
            struct result_text_event ev;
            result_text_event(&r, "/opt/p/libclrprobe.so", &g, &when, &ev);
            assert_well_formed(ev.note);
            assert_non_null(strstr(ev.note, "). The runtime answered "));
            assert_non_null(strstr(ev.note, ". Next step: "));
            if (strlen(hi->next_step) < 300)
                assert_non_null(strstr(ev.note, hi->next_step));
        }
    }
}

/* A profiler that hit a read-only file system: named as such, load_failed, with where to write. */
static void test_write_protect_names_the_fix(void **state)
{
    (void)state;
    const struct hresult_info *hi = hresult_lookup(0x80070013);
    assert_int_equal(hi->cls, HRESULT_CLASS_LOAD); /* so attach's outcome is load_failed */
    struct attach_result r = {.outcome = ATTACH_LOAD_FAILED,
                              .pid = 9,
                              .nspid = 1,
                              .have_hresult = true,
                              .hresult = 0x80070013};
    snprintf(r.error.msg, sizeof(r.error.msg), "the runtime answered %s (0x%08X): %s", hi->name,
             0x80070013u, hi->cause);
    snprintf(r.error.hint, sizeof(r.error.hint), "%s", hi->next_step);
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    result_text_event(&r, "p.so", &g, &when, &ev);
    assert_well_formed(ev.note);
    assert_string_equal(ev.spec.reason, "ProfilerAttachFailed");
    assert_string_equal(ev.spec.type, "Warning");
    assert_non_null(
        strstr(ev.note, "load_failed (HRESULT_FROM_WIN32(ERROR_WRITE_PROTECT) 0x80070013)"));
    assert_non_null(strstr(ev.note, "read-only"));
    assert_non_null(strstr(ev.note, "Next step: Give the profiler a writable path"));
    assert_null(strstr(ev.note, "UNKNOWN"));
}

/* Messages and hints without a final period, or with trailing white space, get exactly one. */
static void test_note_sentences_from_bare_messages(void **state)
{
    (void)state;
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    struct attach_result r = {.outcome = ATTACH_NOT_DOTNET, .pid = 77};
    snprintf(r.error.msg, sizeof(r.error.msg), "pid 77 has no diagnostic socket");
    snprintf(r.error.hint, sizeof(r.error.hint), "list .NET processes with 'clrattach ps' ");
    result_text_event(&r, "p.so", &g, &when, &ev);
    assert_well_formed(ev.note);
    assert_string_equal(ev.note, "Profiler p.so {5F3C8A2E-7B14-4C8D-9E61-2A0B7D3C9F41}, pid 77: "
                                 "not_dotnet. Pid 77 has no diagnostic socket. Next step: list "
                                 ".NET processes with 'clrattach ps'.");
    /* No hint: no "Next step" sentence at all. */
    r.error.hint[0] = '\0';
    result_text_event(&r, "p.so", &g, &when, &ev);
    assert_well_formed(ev.note);
    assert_null(strstr(ev.note, "Next step"));
    /* The success note is one sentence too. */
    struct attach_result ok = {.outcome = ATTACH_STARTUP_LOADED,
                               .pid = 4,
                               .nspid = 1,
                               .startup_load = true,
                               .resume_owed = true,
                               .resumed = true,
                               .resumed_after_ms = 12};
    snprintf(ok.delivered_path, sizeof(ok.delivered_path), "/tmp/libclrprobe-0123.so");
    result_text_event(&ok, "p.so", &g, &when, &ev);
    assert_well_formed(ev.note);
    assert_non_null(strstr(ev.note, "resumed after 12 ms: /tmp/libclrprobe-0123.so."));
}

/* A startup load is never "attached": its own reason, action and words, the --env names (never
 * their values); a failed one says whether the app was resumed. */
static void test_startup_load_words(void **state)
{
    (void)state;
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    struct attach_result r = {.outcome = ATTACH_STARTUP_LOADED,
                              .pid = 5,
                              .nspid = 1,
                              .startup_load = true,
                              .resume_owed = true,
                              .resumed = true,
                              .env_count = 2,
                              .env_sent = 2};
    snprintf(r.env[0], sizeof(r.env[0]), "OTEL_A=secret");
    snprintf(r.env[1], sizeof(r.env[1]), "OTEL_B");
    result_text_event(&r, "p.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerLoadedAtStartup");
    assert_string_equal(ev.spec.type, "Normal");
    assert_string_equal(ev.spec.action, "StartupProfiler");
    assert_null(strstr(ev.note, "ttached"));
    assert_non_null(strstr(ev.note, "Loaded profiler p.so"));
    assert_non_null(strstr(ev.note, "with OTEL_A, OTEL_B set in its environment"));
    assert_null(strstr(ev.note, "secret"));
    /* clrattach's own view of the pid, never called the node's. */
    assert_non_null(strstr(ev.note, ".NET pid 1 (pid 5 as seen from clrattach's PID namespace"));
    assert_null(strstr(ev.note, "node-side"));
    /* A sidecar in the app's PID namespace sees the same pid: named once. */
    r.pid = 6, r.nspid = 6;
    result_text_event(&r, "p.so", &g, &when, &ev);
    assert_non_null(strstr(ev.note, "into .NET pid 6 (uid 0)"));
    assert_null(strstr(ev.note, "pid 6 as seen"));
    assert_string_equal(attach_outcome_name(ATTACH_STARTUP_LOADED), "loaded_at_startup");
    assert_int_equal(attach_outcome_exit_code(ATTACH_STARTUP_LOADED), 0);

    struct attach_result f = {.outcome = ATTACH_STARTUP_FAILED,
                              .pid = 5,
                              .nspid = 1,
                              .resume_owed = true,
                              .resumed = true};
    snprintf(f.error.msg, sizeof(f.error.msg), "never showed in the app's maps");
    result_text_event(&f, "p.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerStartupLoadFailed");
    assert_string_equal(ev.spec.type, "Warning");
    assert_non_null(strstr(ev.note, "startup_load_failed"));
    assert_non_null(strstr(ev.note, "The runtime was resumed: the app runs on."));
    assert_string_equal(attach_outcome_name(ATTACH_STARTUP_FAILED), "startup_load_failed");
    assert_int_equal(attach_outcome_exit_code(ATTACH_STARTUP_FAILED), 7);
    f.resumed = false;
    result_text_event(&f, "p.so", &g, &when, &ev);
    assert_non_null(strstr(ev.note, "the app may still be paused"));
}

/* A known no-op profiler refused before anything is sent: its own reason, outcome and code. */
static void test_inert_refusal(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_INERT, .pid = 9, .nspid = 1};
    snprintf(r.error.msg, sizeof(r.error.msg), "it does nothing when attached");
    snprintf(r.error.hint, sizeof(r.error.hint), "load it at startup");
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    result_text_event(&r, "OpenTelemetry.AutoInstrumentation.Native.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerInertOnAttach");
    assert_string_equal(ev.spec.type, "Warning");
    assert_non_null(strstr(ev.note, "inert_on_attach"));
    assert_non_null(strstr(ev.note, "Next step: load it at startup"));
    assert_string_equal(attach_outcome_name(ATTACH_INERT), "inert_on_attach");
    assert_int_equal(attach_outcome_exit_code(ATTACH_INERT), 14);
    char *j = result_attach_json(&r, "p.so", &g, 14);
    assert_non_null(j);
    assert_non_null(strstr(j, "\"outcome\":\"inert_on_attach\",\"exit_code\":14"));
    assert_null(strstr(j, "expected_inert"));
    free(j);
}

/* --force sent it anyway: the runtime's S_OK is reported, never as a plain success. */
static void test_forced_inert_says_so(void **state)
{
    (void)state;
    struct attach_result r = {
        .outcome = ATTACH_OK, .pid = 9, .nspid = 1, .expected_inert = true, .mapped = true};
    struct ipc_guid g = clsid();
    struct result_text_event ev;
    result_text_event(&r, "p.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerAttachedInert");
    assert_string_equal(ev.spec.type, "Warning");
    assert_non_null(strstr(ev.note, "expected to stay inert"));
    assert_non_null(strstr(ev.note, "Next step: load it at startup"));
    char *j = result_attach_json(&r, "p.so", &g, 0);
    assert_non_null(j);
    assert_non_null(strstr(j, "\"expected_inert\":true"));
    free(j);
    /* Without --force's mark the same success stays a plain one. */
    r.expected_inert = false;
    result_text_event(&r, "p.so", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "ProfilerAttached");
    assert_null(strstr(ev.note, "inert"));
}

/* perfmap and startup-hook: their own reasons and actions, the JSON's command and fields. */
static void test_perfmap_and_hook_words(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_PERFMAP_ENABLED,
                              .kind = ATTACH_KIND_PERFMAP_ENABLE,
                              .perfmap_type = IPC_PERFMAP_PERFMAP,
                              .perfmap_size = 617,
                              .pid = 4242,
                              .nspid = 1,
                              .uid = 1000,
                              .starttime = 9};
    snprintf(r.perfmap_path, sizeof(r.perfmap_path), "/tmp/perf-1.map");
    snprintf(r.node_root, sizeof(r.node_root), "/proc/4242/root");
    struct ipc_guid g = {{0}};
    struct result_text_event ev;
    result_text_event(&r, NULL, &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "PerfMapEnabled");
    assert_string_equal(ev.spec.type, "Normal");
    assert_string_equal(ev.spec.action, "EnablePerfMap");
    assert_non_null(strstr(ev.note, "Enabled the perf map of .NET pid 1"));
    assert_non_null(strstr(ev.note, "/tmp/perf-1.map"));
    char *js = result_attach_json(&r, NULL, &g, 0);
    assert_non_null(js);
    assert_non_null(strstr(js, "\"command\":\"perfmap\""));
    assert_non_null(strstr(js, "\"outcome\":\"perfmap_enabled\""));
    assert_non_null(strstr(js, "\"kind\":\"perfmap\""));
    assert_non_null(strstr(js, "\"node_path\":\"/proc/4242/root/tmp/perf-1.map\""));
    assert_non_null(strstr(js, "\"size\":617"));
    assert_null(strstr(js, "clsid"));
    assert_null(strstr(js, "\"error\""));
    free(js);

    r.outcome = ATTACH_RUNTIME_TOO_OLD;
    snprintf(r.error.msg, sizeof(r.error.msg), "EnablePerfMap needs .NET 8 or later");
    result_text_event(&r, NULL, &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "PerfMapFailed");
    assert_string_equal(ev.spec.type, "Warning");
    assert_int_equal(attach_outcome_exit_code(r.outcome), 15);

    struct attach_result h = {.outcome = ATTACH_HOOK_APPLIED,
                              .kind = ATTACH_KIND_STARTUP_HOOK,
                              .pid = 7,
                              .nspid = 1,
                              .uid = 1000};
    snprintf(h.delivered_path, sizeof(h.delivered_path), "/tmp/Hook.dll-0123.so");
    result_text_event(&h, "/src/Hook.dll", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "StartupHookApplied");
    assert_string_equal(ev.spec.action, "ApplyStartupHook");
    assert_non_null(strstr(ev.note, "Ran the startup hook Hook.dll of .NET pid 1"));
    js = result_attach_json(&h, "/src/Hook.dll", &g, 0);
    assert_non_null(strstr(js, "\"command\":\"startup-hook\""));
    assert_non_null(strstr(js, "\"assembly\":\"/src/Hook.dll\""));
    free(js);
    h.outcome = ATTACH_TARGET_DIED;
    result_text_event(&h, "/src/Hook.dll", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "StartupHookFailed");
    assert_true(attach_outcome_ok(ATTACH_PERFMAP_DISABLED) && !attach_outcome_ok(h.outcome));
}

/* otel: its own reasons, the note naming what started and where, the JSON's otel member; a
 * status that said refused is a Warning with the agent's reason, never a success. */
static void test_otel_words(void **state)
{
    (void)state;
    struct attach_result r = {.outcome = ATTACH_OTEL_STARTED,
                              .kind = ATTACH_KIND_OTEL_START,
                              .pid = 4242,
                              .nspid = 1,
                              .uid = 1000,
                              .duration_ms = 205};
    r.otel = (struct otel_status){
        .state = OTEL_STATE_STARTED, .initialize_ms = 150, .stop_ms = -1, .flushed = -1};
    snprintf(r.otel.service_name, sizeof(r.otel.service_name), "shop-web");
    snprintf(r.otel.instrumentations, sizeof(r.otel.instrumentations), "http_client,aspnetcore");
    snprintf(r.otel.traces, sizeof(r.otel.traces), "http_client,aspnetcore");
    snprintf(r.otel.protocol, sizeof(r.otel.protocol), "http/protobuf");
    snprintf(r.otel.exporter, sizeof(r.otel.exporter), "otlp");
    snprintf(r.otel.endpoint, sizeof(r.otel.endpoint), "http://collector:4318");
    struct ipc_guid g = {{0}};
    struct result_text_event ev;
    result_text_event(&r, "/otel-agent", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "OpenTelemetryStarted");
    assert_string_equal(ev.spec.type, "Normal");
    assert_string_equal(ev.spec.action, "ApplyStartupHook");
    assert_non_null(strstr(ev.note, "Started OpenTelemetry in .NET pid 1 (pid 4242 as seen from "
                                    "clrattach's PID namespace, uid 1000) in 205 ms: service "
                                    "shop-web, http_client,aspnetcore exported with OTLP "
                                    "http/protobuf to http://collector:4318"));
    char *js = result_attach_json(&r, "/otel-agent", &g, 0);
    assert_non_null(js);
    assert_non_null(strstr(js, "\"command\":\"otel\",\"outcome\":\"otel_started\""));
    assert_non_null(strstr(js, "\"agent\":\"/otel-agent\",\"action\":\"start\""));
    assert_non_null(strstr(js, "\"instrumentations\":[\"http_client\",\"aspnetcore\"]"));
    assert_non_null(strstr(js, "\"metrics\":[]"));
    assert_non_null(strstr(js, "\"initialize_ms\":150"));
    assert_null(strstr(js, "stop_ms"));
    free(js);

    r.outcome = ATTACH_OTEL_FAILED;
    r.otel.state = OTEL_STATE_REFUSED;
    snprintf(r.error.msg, sizeof(r.error.msg),
             "the OpenTelemetry agent refused to start: no endpoint");
    result_text_event(&r, "/otel-agent", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "OpenTelemetryFailed");
    assert_string_equal(ev.spec.type, "Warning");
    assert_non_null(strstr(ev.note, "OpenTelemetry start, pid 1: otel_failed"));
    assert_false(attach_outcome_ok(r.outcome));
    assert_int_equal(attach_outcome_exit_code(r.outcome), 7);
    r.outcome = ATTACH_ALREADY_ACTIVE;
    result_text_event(&r, "/otel-agent", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "OpenTelemetryAlreadyRunning");
    assert_string_equal(ev.spec.type, "Normal");
    assert_int_equal(attach_outcome_exit_code(ATTACH_OTEL_SDK_PRESENT), 14);

    r.kind = ATTACH_KIND_OTEL_STOP;
    r.outcome = ATTACH_OTEL_STOPPED;
    r.otel.state = OTEL_STATE_STOPPED;
    r.otel.flushed = 1;
    result_text_event(&r, "/otel-agent", &g, &when, &ev);
    assert_string_equal(ev.spec.reason, "OpenTelemetryStopped");
    assert_non_null(strstr(ev.note, "Stopped OpenTelemetry in .NET pid 1"));
    js = result_attach_json(&r, "/otel-agent", &g, 0);
    assert_non_null(strstr(js, "\"action\":\"stop\""));
    assert_non_null(strstr(js, "\"flushed\":true"));
    free(js);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attached),
        cmocka_unit_test(test_perfmap_and_hook_words),
        cmocka_unit_test(test_already_active_is_normal),
        cmocka_unit_test(test_failure_is_warning_with_next_step),
        cmocka_unit_test(test_target_died_has_its_reason),
        cmocka_unit_test(test_note_cut_to_1024_on_utf8),
        cmocka_unit_test(test_termination_message),
        cmocka_unit_test(test_json_exit_code_is_the_process_code),
        cmocka_unit_test(test_listen_no_node_pid),
        cmocka_unit_test(test_note_every_hresult_well_formed),
        cmocka_unit_test(test_write_protect_names_the_fix),
        cmocka_unit_test(test_note_sentences_from_bare_messages),
        cmocka_unit_test(test_inert_refusal),
        cmocka_unit_test(test_forced_inert_says_so),
        cmocka_unit_test(test_startup_load_words),
        cmocka_unit_test(test_otel_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
