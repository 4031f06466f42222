/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "flow/listen_fsm.h"

/* The machine driven by hand: no sockets, a clock that moves only when a test moves it. */

static const struct listen_fsm_cfg base_cfg = {
    .env_count = 0,
    .attach_allowed = true,
    .resume_deadline_ms = 5000,
    .timeout_ms = 10000,
};

/* Asks for the next step and checks it is sending `cmd` (with `arg`). */
static void expect_send(struct listen_fsm *f, int64_t now, enum listen_cmd cmd, int arg)
{
    struct listen_step s;
    enum listen_action a = listen_fsm_next(f, now, &s);
    if (a != LISTEN_SEND || s.cmd != cmd || s.arg != arg)
        fail_msg("expected to send %s(%d), got action %d cmd %s(%d)", listen_cmd_name(cmd), arg,
                 (int)a, listen_cmd_name(s.cmd), s.arg);
}

static void reply(struct listen_fsm *f, int64_t now, int err, uint32_t hr)
{
    struct listen_reply r = {.err = err, .hr = hr, .pauses = -1};
    listen_fsm_replied(f, now, &r);
}

static void reply_env(struct listen_fsm *f, int pauses)
{
    struct listen_reply r = {.pauses = pauses};
    listen_fsm_replied(f, 0, &r);
}

static void expect_action(struct listen_fsm *f, int64_t now, enum listen_action want)
{
    struct listen_step s;
    enum listen_action a = listen_fsm_next(f, now, &s);
    if (a != want)
        fail_msg("expected action %d, got %d (cmd %s)", (int)want, (int)a, listen_cmd_name(s.cmd));
}

/* Started with `cfg`, ProcessInfo answered, selected, the environment answered `pauses`. */
static void to_probed(struct listen_fsm *f, const struct listen_fsm_cfg *cfg, int pauses)
{
    listen_fsm_init(f, cfg, 0);
    expect_send(f, 0, LISTEN_CMD_PROCESS_INFO, 0);
    reply(f, 0, 0, 0);
    expect_action(f, 0, LISTEN_SELECT);
    listen_fsm_selected(f, true);
    expect_send(f, 0, LISTEN_CMD_ENVIRONMENT, 0);
    reply_env(f, pauses);
}

/* ProcessInfo answered, selected, the environment says it pauses, delivered. */
static void to_paused_delivered(struct listen_fsm *f)
{
    struct listen_fsm_cfg cfg = f->cfg;
    to_probed(f, &cfg, 1);
    expect_action(f, 0, LISTEN_DELIVER);
    listen_fsm_delivered(f, 0);
}

static void test_startup_path(void **state)
{
    struct listen_fsm f;
    struct listen_fsm_cfg cfg = base_cfg;
    (void)state;

    cfg.env_count = 2;
    listen_fsm_init(&f, &cfg, 0);
    to_paused_delivered(&f);
    expect_send(&f, 1, LISTEN_CMD_SETENV, 0);
    reply(&f, 1, 0, 0);
    expect_send(&f, 2, LISTEN_CMD_SETENV, 1);
    reply(&f, 2, 0, 0);
    expect_send(&f, 3, LISTEN_CMD_STARTUP, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_NONE);
    reply(&f, 3, 0, 0);
    expect_send(&f, 4, LISTEN_CMD_RESUME, 0);
    reply(&f, 4, 0, 0);
    /* Resumed: not loaded yet as far as we know. The verification says it is. */
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_NONE);
    expect_send(&f, 5, LISTEN_CMD_VERIFY, 0);
    reply(&f, 5, 0, LISTEN_HR_ALREADY_ACTIVE);
    expect_action(&f, 5, LISTEN_DONE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_STARTUP_LOADED);
    assert_true(f.resumed);
    assert_int_equal(f.env_sent, 2);
    assert_string_equal(listen_end_name(listen_fsm_end(&f)), "loaded_at_startup");
}

static void test_one_command_in_flight(void **state)
{
    struct listen_fsm f;
    struct listen_step s;
    (void)state;

    listen_fsm_init(&f, &base_cfg, 0);
    expect_send(&f, 0, LISTEN_CMD_PROCESS_INFO, 0);
    /* Asked again before the reply: nothing more to send (the runtime serves one command per
     * connection; a second one in flight would be sent to nobody). */
    assert_int_equal(listen_fsm_next(&f, 0, &s), LISTEN_WAIT);
    assert_int_equal(s.wake, INT64_MAX);
    assert_int_equal(listen_fsm_next(&f, 0, &s), LISTEN_WAIT);
    /* Events for another phase are ignored. */
    listen_fsm_selected(&f, true);
    listen_fsm_delivered(&f, 0);
    reply(&f, 0, 0, 0);
    expect_action(&f, 0, LISTEN_SELECT);
}

static void test_process_info_fallback(void **state)
{
    struct listen_fsm f;
    (void)state;

    listen_fsm_init(&f, &base_cfg, 0);
    expect_send(&f, 0, LISTEN_CMD_PROCESS_INFO, 0);
    reply(&f, 0, 0, LISTEN_HR_UNKNOWN_COMMAND);
    expect_send(&f, 0, LISTEN_CMD_PROCESS_INFO, 1);
    reply(&f, 0, 0, LISTEN_HR_UNKNOWN_COMMAND);
    expect_send(&f, 0, LISTEN_CMD_PROCESS_INFO, 2);
    reply(&f, 0, 0, 0);
    expect_action(&f, 0, LISTEN_SELECT);

    /* Not even ProcessInfo: failed, and resumed (it may be paused). */
    listen_fsm_init(&f, &base_cfg, 0);
    for (int i = 0; i < 3; i++) {
        expect_send(&f, 0, LISTEN_CMD_PROCESS_INFO, i);
        reply(&f, 0, 0, LISTEN_HR_UNKNOWN_COMMAND);
    }
    expect_send(&f, 0, LISTEN_CMD_RESUME, 0);
    reply(&f, 0, 0, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);
    assert_int_equal(f.failed_cmd, LISTEN_CMD_PROCESS_INFO);
    assert_int_equal(f.hr, LISTEN_HR_UNKNOWN_COMMAND);
}

/* Every step of the paused path that fails still ends in ResumeRuntime, and the failure stays
 * the one reported (not the resume's success). */
static void test_resume_after_each_failure(void **state)
{
    (void)state;
    for (int step = 0; step < 6; step++) {
        struct listen_fsm f;
        struct listen_fsm_cfg cfg = base_cfg;
        enum listen_cmd want = LISTEN_CMD_NONE;
        cfg.env_count = 1;
        listen_fsm_init(&f, &cfg, 0);
        expect_send(&f, 0, LISTEN_CMD_PROCESS_INFO, 0);
        if (step == 0) {
            reply(&f, 0, -ECONNRESET, 0), want = LISTEN_CMD_PROCESS_INFO;
            goto resume;
        }
        reply(&f, 0, 0, 0);
        listen_fsm_selected(&f, true);
        expect_send(&f, 0, LISTEN_CMD_ENVIRONMENT, 0);
        if (step == 1) {
            /* An unreadable environment is no failure: taken to pause, and the path goes on;
             * here the delivery then fails. */
            reply(&f, 0, -EPROTO, 0);
            expect_action(&f, 0, LISTEN_DELIVER);
            listen_fsm_delivered(&f, -ENOSPC), want = LISTEN_CMD_NONE;
            goto resume;
        }
        reply_env(&f, 1);
        expect_action(&f, 0, LISTEN_DELIVER);
        if (step == 2) {
            listen_fsm_delivered(&f, -EACCES), want = LISTEN_CMD_NONE;
            goto resume;
        }
        listen_fsm_delivered(&f, 0);
        expect_send(&f, 0, LISTEN_CMD_SETENV, 0);
        if (step == 3) {
            reply(&f, 0, 0, 0x80070057u), want = LISTEN_CMD_SETENV;
            goto resume;
        }
        reply(&f, 0, 0, 0);
        expect_send(&f, 0, LISTEN_CMD_STARTUP, 0);
        if (step == 4)
            reply(&f, 0, 0, 0x80004005u), want = LISTEN_CMD_STARTUP;
        else
            reply(&f, 0, -ETIMEDOUT, 0), want = LISTEN_CMD_STARTUP;
    resume:
        expect_send(&f, 1, LISTEN_CMD_RESUME, 0);
        reply(&f, 1, 0, 0);
        expect_action(&f, 2, LISTEN_DONE);
        if (listen_fsm_end(&f) != LISTEN_END_FAILED || f.failed_cmd != want || !f.resumed)
            fail_msg("step %d: end %s, failed %s, resumed %d", step,
                     listen_end_name(listen_fsm_end(&f)), listen_cmd_name(f.failed_cmd), f.resumed);
    }
}

static void test_not_selected_is_resumed(void **state)
{
    struct listen_fsm f;
    (void)state;

    listen_fsm_init(&f, &base_cfg, 0);
    expect_send(&f, 0, LISTEN_CMD_PROCESS_INFO, 0);
    reply(&f, 0, 0, 0);
    listen_fsm_selected(&f, false);
    expect_send(&f, 0, LISTEN_CMD_RESUME, 0);
    reply(&f, 0, 0, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_NOT_SELECTED);
}

static void test_startup_before_pause_point_retried(void **state)
{
    struct listen_fsm f;
    struct listen_step s;
    (void)state;

    listen_fsm_init(&f, &base_cfg, 0);
    to_paused_delivered(&f);
    expect_send(&f, 100, LISTEN_CMD_STARTUP, 0);
    reply(&f, 100, 0, LISTEN_HR_INVALIDARG);
    /* Not yet: wait for the timer, then again. */
    assert_int_equal(listen_fsm_next(&f, 100, &s), LISTEN_WAIT);
    assert_true(s.wake > 100 && s.wake <= 300);
    expect_send(&f, s.wake, LISTEN_CMD_STARTUP, 0);
    reply(&f, s.wake, 0, 0);
    expect_send(&f, s.wake, LISTEN_CMD_RESUME, 0);
    reply(&f, s.wake, 0, 0);
    expect_send(&f, s.wake, LISTEN_CMD_VERIFY, 0);
    reply(&f, s.wake, 0, LISTEN_HR_ALREADY_ACTIVE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_STARTUP_LOADED);

    /* Refused past the moment a runtime pauses: it runs already (served by an earlier
     * clrattach). Resumed all the same, then AttachProfiler for a profiler that attaches. */
    listen_fsm_init(&f, &base_cfg, 0);
    to_paused_delivered(&f);
    int64_t now = 0;
    int sent = 0;
    for (;;) {
        enum listen_action a = listen_fsm_next(&f, now, &s);
        if (a == LISTEN_WAIT) {
            assert_true(s.wake <= base_cfg.resume_deadline_ms);
            now = s.wake;
            continue;
        }
        assert_int_equal(a, LISTEN_SEND);
        if (s.cmd == LISTEN_CMD_RESUME)
            break;
        assert_int_equal(s.cmd, LISTEN_CMD_STARTUP);
        sent++;
        reply(&f, now, 0, LISTEN_HR_INVALIDARG);
    }
    assert_true(now >= 1000 && now < base_cfg.resume_deadline_ms);
    assert_true(sent > 3 && sent < 100);
    reply(&f, now, 0, 0);
    expect_send(&f, now, LISTEN_CMD_ATTACH, 0);
    reply(&f, now, 0, 0x80131367u); /* already active: this runtime has it */
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);
    assert_int_equal(f.failed_cmd, LISTEN_CMD_ATTACH);
    assert_true(f.was_running && f.resumed);

    /* A profiler that does nothing on attach ends after the resume. */
    struct listen_fsm_cfg cfg = base_cfg;
    cfg.attach_allowed = false;
    listen_fsm_init(&f, &cfg, 0);
    to_paused_delivered(&f);
    expect_send(&f, 0, LISTEN_CMD_STARTUP, 0);
    reply(&f, 0, 0, LISTEN_HR_INVALIDARG);
    expect_send(&f, 1000, LISTEN_CMD_STARTUP, 0);
    reply(&f, 1000, 0, LISTEN_HR_INVALIDARG);
    expect_send(&f, 1000, LISTEN_CMD_RESUME, 0);
    reply(&f, 1000, 0, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_STARTUP_ONLY);

    /* With a resume deadline shorter than that moment, the deadline wins: resumed in time. */
    cfg = base_cfg;
    cfg.resume_deadline_ms = 300;
    listen_fsm_init(&f, &cfg, 0);
    to_paused_delivered(&f);
    now = 0;
    for (;;) {
        enum listen_action a = listen_fsm_next(&f, now, &s);
        if (a == LISTEN_WAIT) {
            now = s.wake;
            continue;
        }
        if (s.cmd == LISTEN_CMD_RESUME)
            break;
        reply(&f, now, 0, LISTEN_HR_INVALIDARG);
    }
    assert_true(now <= 300);
    reply(&f, now, 0, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);
    assert_int_equal(f.failed_cmd, LISTEN_CMD_STARTUP);
}

static void test_resume_deadline_overrides(void **state)
{
    struct listen_fsm f;
    struct listen_fsm_cfg cfg = base_cfg;
    (void)state;

    cfg.env_count = 3;
    listen_fsm_init(&f, &cfg, 1000);
    expect_send(&f, 1000, LISTEN_CMD_PROCESS_INFO, 0);
    reply(&f, 1000, 0, 0);
    listen_fsm_selected(&f, true);
    expect_send(&f, 1000, LISTEN_CMD_ENVIRONMENT, 0);
    reply_env(&f, 1);
    /* The delivery took past the deadline: the resume is next, not the environment. */
    expect_action(&f, 1000, LISTEN_DELIVER);
    listen_fsm_delivered(&f, 0);
    expect_send(&f, 1000 + cfg.resume_deadline_ms, LISTEN_CMD_RESUME, 0);
    reply(&f, 6001, 0, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);
    assert_true(f.deadline_hit);
    assert_int_equal(f.err, -ETIMEDOUT);
    assert_int_equal(f.env_sent, 0);
}

static void test_resume_failure_reported(void **state)
{
    struct listen_fsm f;
    (void)state;

    listen_fsm_init(&f, &base_cfg, 0);
    to_paused_delivered(&f);
    expect_send(&f, 0, LISTEN_CMD_STARTUP, 0);
    reply(&f, 0, 0, 0);
    expect_send(&f, 0, LISTEN_CMD_RESUME, 0);
    reply(&f, 0, -ECONNRESET, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);
    assert_int_equal(f.failed_cmd, LISTEN_CMD_RESUME);
    assert_false(f.resumed);
    assert_true(f.resume_sent);
    /* No answer, after StartupProfiler took the path: the runtime may still load it. */
    assert_false(f.resume_answered);
    assert_true(f.startup_taken);

    /* Refused (answered with an error): answered, not resumed. */
    listen_fsm_init(&f, &base_cfg, 0);
    to_paused_delivered(&f);
    expect_send(&f, 0, LISTEN_CMD_STARTUP, 0);
    reply(&f, 0, 0, 0x80004005u);
    assert_false(f.startup_taken);
    expect_send(&f, 0, LISTEN_CMD_RESUME, 0);
    reply(&f, 0, 0, 0x80004005u);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);
    assert_int_equal(f.failed_cmd, LISTEN_CMD_STARTUP);
    assert_true(f.resume_answered);
    assert_false(f.resumed);
}

static void test_nosuspend_attach(void **state)
{
    struct listen_fsm f;
    struct listen_fsm_cfg cfg = base_cfg;
    struct listen_step s;
    (void)state;

    to_probed(&f, &cfg, 0);
    expect_action(&f, 0, LISTEN_DELIVER);
    listen_fsm_delivered(&f, 0);
    expect_send(&f, 0, LISTEN_CMD_ATTACH, 0);
    /* Not started yet: retried; never a resume (nothing is paused). */
    reply(&f, 0, 0, LISTEN_HR_NOT_YET_AVAILABLE);
    assert_int_equal(listen_fsm_next(&f, 0, &s), LISTEN_WAIT);
    expect_send(&f, s.wake, LISTEN_CMD_ATTACH, 0);
    reply(&f, s.wake, 0, 0);
    expect_action(&f, s.wake, LISTEN_DONE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_ATTACHED);
    assert_false(f.resume_sent);

    /* A refusal ends it without a resume either, and the deadline does not apply. */
    to_probed(&f, &cfg, 0);
    listen_fsm_delivered(&f, 0);
    expect_send(&f, 99999, LISTEN_CMD_ATTACH, 0);
    reply(&f, 99999, 0, 0x8013136Au);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);
    assert_false(f.resume_sent);

    /* A startup-only profiler is not sent to a running runtime; --env is not set in one
     * unless forced. */
    cfg.attach_allowed = false;
    to_probed(&f, &cfg, 0);
    expect_action(&f, 0, LISTEN_DONE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_STARTUP_ONLY);

    cfg.attach_allowed = true;
    cfg.env_count = 1;
    to_probed(&f, &cfg, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_ENV_RUNNING);

    cfg.env_running = true;
    to_probed(&f, &cfg, 0);
    listen_fsm_delivered(&f, 0);
    expect_send(&f, 0, LISTEN_CMD_SETENV, 0);
    reply(&f, 0, 0, 0);
    expect_send(&f, 0, LISTEN_CMD_ATTACH, 0);
    reply(&f, 0, 0, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_ATTACHED);
}

static void test_gone(void **state)
{
    struct listen_fsm f;
    (void)state;

    listen_fsm_init(&f, &base_cfg, 0);
    to_paused_delivered(&f);
    expect_send(&f, 0, LISTEN_CMD_STARTUP, 0);
    listen_fsm_gone(&f);
    expect_action(&f, 0, LISTEN_DONE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_GONE);
    /* A late reply changes nothing. */
    reply(&f, 0, 0, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_GONE);
    listen_fsm_gone(&f);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_GONE);
}

static void test_stop(void **state)
{
    struct listen_fsm f;
    struct listen_fsm_cfg cfg = base_cfg;
    (void)state;

    /* Paused, StartupProfiler in flight: its reply, then the resume, nothing else. */
    cfg.env_count = 1;
    listen_fsm_init(&f, &cfg, 0);
    to_paused_delivered(&f);
    expect_send(&f, 0, LISTEN_CMD_SETENV, 0);
    listen_fsm_stop(&f, 1);
    expect_action(&f, 1, LISTEN_WAIT);
    reply(&f, 1, 0, 0);
    expect_send(&f, 1, LISTEN_CMD_RESUME, 0);
    reply(&f, 1, 0, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);
    assert_int_equal(f.err, -EINTR);
    assert_true(f.resumed);

    /* Before anything is known: resumed too (it may be paused). */
    listen_fsm_init(&f, &base_cfg, 0);
    listen_fsm_stop(&f, 0);
    expect_send(&f, 0, LISTEN_CMD_RESUME, 0);
    reply(&f, 0, 0, 0);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);

    /* A runtime that does not pause ends at once. */
    to_probed(&f, &base_cfg, 0);
    listen_fsm_stop(&f, 0);
    expect_action(&f, 0, LISTEN_DONE);
    assert_false(f.resume_sent);
}

/* Paused, StartupProfiler taken, resumed at `now`: the verification is due. */
static void to_resumed(struct listen_fsm *f, const struct listen_fsm_cfg *cfg, int64_t now)
{
    listen_fsm_init(f, cfg, 0);
    to_paused_delivered(f);
    expect_send(f, now, LISTEN_CMD_STARTUP, 0);
    reply(f, now, 0, 0);
    expect_send(f, now, LISTEN_CMD_RESUME, 0);
    reply(f, now, 0, 0);
    assert_true(f->resumed);
    expect_send(f, now, LISTEN_CMD_VERIFY, 0);
}

/* Seen after the resume: a connection once the resume went out (or while it was in flight: the
 * runtime holds one at a time); none before counts. */
static void test_seen_after_resume(void **state)
{
    struct listen_fsm f;
    (void)state;

    listen_fsm_init(&f, &base_cfg, 0);
    to_paused_delivered(&f);
    listen_fsm_connected(&f);
    expect_send(&f, 0, LISTEN_CMD_STARTUP, 0);
    reply(&f, 0, 0, 0);
    listen_fsm_connected(&f);
    assert_false(f.seen_after_resume);
    expect_send(&f, 0, LISTEN_CMD_RESUME, 0);
    listen_fsm_connected(&f);
    assert_true(f.seen_after_resume);

    /* Resumed, never back: the verification ends unverified, not seen. */
    to_resumed(&f, &base_cfg, 0);
    listen_fsm_unsent(&f);
    expect_action(&f, base_cfg.timeout_ms, LISTEN_DONE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_UNVERIFIED);
    assert_false(f.seen_after_resume);
}

static void test_verify_load_error(void **state)
{
    static const uint32_t load_errors[] = {
        0x80040111u, /* CLASS_E_CLASSNOTAVAILABLE: a wrong CLSID */
        0x8007007Eu, /* ERROR_MOD_NOT_FOUND: the library or one it needs */
        0x80004005u, /* E_FAIL */
        0,           /* S_OK: not loaded at startup, loaded on this attach */
    };
    struct listen_fsm f;
    (void)state;

    for (size_t i = 0; i < sizeof(load_errors) / sizeof(load_errors[0]); i++) {
        to_resumed(&f, &base_cfg, 10);
        reply(&f, 10, 0, load_errors[i]);
        expect_action(&f, 10, LISTEN_DONE);
        assert_int_equal(listen_fsm_end(&f), LISTEN_END_STARTUP_FAILED);
        assert_int_equal(f.verify_err, 0);
        assert_int_equal(f.verify_hr, load_errors[i]);
        assert_string_equal(listen_end_name(listen_fsm_end(&f)), "startup_load_failed");
    }
}

static void test_verify_not_yet_retried(void **state)
{
    struct listen_fsm f;
    struct listen_step s;
    (void)state;

    /* Still starting: asked again on a timer, then the answer counts. A connection that
     * failed is asked again too. */
    to_resumed(&f, &base_cfg, 10);
    reply(&f, 10, 0, LISTEN_HR_NOT_YET_AVAILABLE);
    assert_int_equal(listen_fsm_next(&f, 10, &s), LISTEN_WAIT);
    assert_true(s.wake > 10 && s.wake <= 210);
    expect_send(&f, s.wake, LISTEN_CMD_VERIFY, 0);
    reply(&f, s.wake, -ECONNRESET, 0);
    int64_t now = s.wake;
    assert_int_equal(listen_fsm_next(&f, now, &s), LISTEN_WAIT);
    expect_send(&f, s.wake, LISTEN_CMD_VERIFY, 0);
    reply(&f, s.wake, 0, LISTEN_HR_ALREADY_ACTIVE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_STARTUP_LOADED);

    /* Never more than --timeout after the resume: then unverified, never loaded. */
    to_resumed(&f, &base_cfg, 10);
    now = 10;
    int sent = 1;
    while (listen_fsm_end(&f) == LISTEN_END_NONE) {
        reply(&f, now, 0, LISTEN_HR_NOT_YET_AVAILABLE);
        enum listen_action a = listen_fsm_next(&f, now, &s);
        if (a == LISTEN_WAIT) {
            assert_true(s.wake <= 10 + base_cfg.timeout_ms);
            now = s.wake;
            a = listen_fsm_next(&f, now, &s);
        }
        if (a == LISTEN_SEND) {
            assert_int_equal(s.cmd, LISTEN_CMD_VERIFY);
            sent++;
        }
        assert_true(sent < 200);
    }
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_UNVERIFIED);
    assert_true(now <= 10 + base_cfg.timeout_ms);
    assert_string_equal(listen_end_name(listen_fsm_end(&f)), "unverified");

    /* A verification that never comes back (the caller's deadline, -ETIMEDOUT) past the bound. */
    to_resumed(&f, &base_cfg, 10);
    reply(&f, 10 + base_cfg.timeout_ms, -ETIMEDOUT, 0);
    expect_action(&f, 10 + base_cfg.timeout_ms, LISTEN_DONE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_UNVERIFIED);
}

static void test_verify_only_after_startup(void **state)
{
    struct listen_fsm f;
    (void)state;

    /* StartupProfiler refused: resumed, failed, nothing to verify. */
    listen_fsm_init(&f, &base_cfg, 0);
    to_paused_delivered(&f);
    expect_send(&f, 0, LISTEN_CMD_STARTUP, 0);
    reply(&f, 0, 0, 0x80004005u);
    expect_send(&f, 0, LISTEN_CMD_RESUME, 0);
    reply(&f, 0, 0, 0);
    expect_action(&f, 0, LISTEN_DONE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);

    /* Taken, but the resume failed: failed as before, no verification. */
    listen_fsm_init(&f, &base_cfg, 0);
    to_paused_delivered(&f);
    expect_send(&f, 0, LISTEN_CMD_STARTUP, 0);
    reply(&f, 0, 0, 0);
    expect_send(&f, 0, LISTEN_CMD_RESUME, 0);
    reply(&f, 0, 0, 0x80004005u);
    expect_action(&f, 0, LISTEN_DONE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_FAILED);

    /* A runtime that does not pause: its AttachProfiler's answer is the outcome. */
    to_probed(&f, &base_cfg, 0);
    expect_action(&f, 0, LISTEN_DELIVER);
    listen_fsm_delivered(&f, 0);
    expect_send(&f, 0, LISTEN_CMD_ATTACH, 0);
    reply(&f, 0, 0, 0);
    expect_action(&f, 0, LISTEN_DONE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_ATTACHED);
}

static void test_verify_stop(void **state)
{
    struct listen_fsm f;
    (void)state;

    /* Stopped between two verifications: unverified at once (resumed already). */
    to_resumed(&f, &base_cfg, 10);
    reply(&f, 10, 0, LISTEN_HR_NOT_YET_AVAILABLE);
    listen_fsm_stop(&f, 11);
    expect_action(&f, 11, LISTEN_DONE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_UNVERIFIED);

    /* Stopped with the verification in flight: its answer still counts. */
    to_resumed(&f, &base_cfg, 10);
    listen_fsm_stop(&f, 11);
    expect_action(&f, 11, LISTEN_WAIT);
    reply(&f, 12, 0, LISTEN_HR_ALREADY_ACTIVE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_STARTUP_LOADED);

    /* ... and a "not yet" then is not asked again. */
    to_resumed(&f, &base_cfg, 10);
    listen_fsm_stop(&f, 11);
    reply(&f, 12, 0, LISTEN_HR_NOT_YET_AVAILABLE);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_UNVERIFIED);

    /* The runtime gone during the verification: gone. */
    to_resumed(&f, &base_cfg, 10);
    reply(&f, 10, 0, LISTEN_HR_NOT_YET_AVAILABLE);
    listen_fsm_gone(&f);
    assert_int_equal(listen_fsm_end(&f), LISTEN_END_GONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_startup_path),
        cmocka_unit_test(test_one_command_in_flight),
        cmocka_unit_test(test_process_info_fallback),
        cmocka_unit_test(test_resume_after_each_failure),
        cmocka_unit_test(test_not_selected_is_resumed),
        cmocka_unit_test(test_startup_before_pause_point_retried),
        cmocka_unit_test(test_resume_deadline_overrides),
        cmocka_unit_test(test_resume_failure_reported),
        cmocka_unit_test(test_seen_after_resume),
        cmocka_unit_test(test_nosuspend_attach),
        cmocka_unit_test(test_gone),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_verify_load_error),
        cmocka_unit_test(test_verify_not_yet_retried),
        cmocka_unit_test(test_verify_only_after_startup),
        cmocka_unit_test(test_verify_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
