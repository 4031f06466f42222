/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `--listen`'s outcome wording (lib/flow/listen_outcome.c): the next step of an instance that
 * failed once its owed ResumeRuntime went out.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "flow/listen_internal.h"
#include "runtime/hresult.h"

/* The machine's resume state: resumed, refused (answered with an error), or no answer. */
static const struct listen_fsm resumed = {
    .resume_sent = true, .resumed = true, .resume_answered = true};
static const struct listen_fsm refused = {.resume_sent = true, .resume_answered = true};
static const struct listen_fsm unanswered = {.resume_sent = true};

/* The refused step's next step is kept, and the resume's state follows it. */
static void test_resume_hint_keeps_next_step(void **state)
{
    (void)state;
    char out[CLA_ERR_HINT_MAX];
    listen_resume_hint("check --clsid", &resumed, out, sizeof(out));
    assert_string_equal(out, "check --clsid; the runtime was resumed");
    listen_resume_hint("check --clsid", &refused, out, sizeof(out));
    assert_string_equal(
        out, "check --clsid; the runtime refused ResumeRuntime: the app may still be paused");
    listen_resume_hint("check --clsid", &unanswered, out, sizeof(out));
    assert_string_equal(out, "check --clsid; ResumeRuntime got no answer: the app may still be "
                             "paused, or resumed without saying so");
    listen_resume_hint("", &resumed, out, sizeof(out));
    assert_string_equal(out, "nothing more was sent; the runtime was resumed");
    listen_resume_hint(NULL, &resumed, out, sizeof(out));
    assert_string_equal(out, "nothing more was sent; the runtime was resumed");
}

/* As the outcome uses it: the error's own hint, composed apart and set back. E_FAIL's next step
 * (the one the fake runtime's refusal carries) survives whole. */
static void test_resume_hint_from_error(void **state)
{
    (void)state;
    struct cla_error e = {0};
    const char *step = hresult_lookup(0x80004005u)->next_step;
    err_set(&e, -EREMOTEIO, "the runtime refused StartupProfiler");
    err_hint(&e, "%s", step);
    char hint[sizeof(e.hint)];
    listen_resume_hint(e.hint, &resumed, hint, sizeof(hint));
    err_hint(&e, "%s", hint);
    char want[2 * sizeof(e.hint)];
    snprintf(want, sizeof(want), "%s; the runtime was resumed", step);
    assert_true(strlen(want) < sizeof(e.hint));
    assert_string_equal(e.hint, want);
}

/* A next step too long for the room is cut; the resume's state is kept whole. */
static void test_resume_hint_state_kept_whole(void **state)
{
    (void)state;
    char long_step[600];
    memset(long_step, 'x', sizeof(long_step) - 1);
    long_step[sizeof(long_step) - 1] = '\0';
    char out[64];
    listen_resume_hint(long_step, &resumed, out, sizeof(out));
    assert_int_equal(strlen(out), sizeof(out) - 1);
    const char *tail = "; the runtime was resumed";
    assert_string_equal(out + strlen(out) - strlen(tail), tail);
    assert_true(out[0] == 'x');
    /* No room even for the state: as much of it as fits, terminated. */
    char tiny[8];
    listen_resume_hint("step", &resumed, tiny, sizeof(tiny));
    assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
    assert_true(strncmp(tiny, "the run", 7) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_hint_keeps_next_step),
        cmocka_unit_test(test_resume_hint_from_error),
        cmocka_unit_test(test_resume_hint_state_kept_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
