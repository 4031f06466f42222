/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding the apiserver's replies (lib/report/k8s_reply.c): Status bodies, pod GETs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report/k8s_reply.h"

#define FIXTURES "tests/fixtures/k8s"
#define UID      "2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11"

static char *slurp(const char *name, size_t *len)
{
    char path[256];
    snprintf(path, sizeof(path), FIXTURES "/%s", name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    assert_non_null(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static void test_status_fixtures(void **state)
{
    (void)state;
    size_t len;
    struct k8s_status st;
    struct cla_error e = {0};
    char *b = slurp("status_422_invalid.json", &len);
    assert_int_equal(k8s_status_parse(b, len, &st, &e), 0);
    assert_int_equal(st.code, 422);
    assert_string_equal(st.status, "Failure");
    assert_string_equal(st.reason, "Invalid");
    assert_string_equal(st.details_name, "orders-api-1.18d0dc59c18be115");
    assert_string_equal(st.details_group, "events.k8s.io");
    assert_string_equal(st.details_kind, "Event");
    assert_int_equal(st.n_causes, 2);
    assert_int_equal(st.n_causes_total, 2);
    assert_string_equal(st.causes[0].reason, "FieldValueRequired");
    assert_string_equal(st.causes[0].field, "action");
    assert_string_equal(st.causes[1].field, "reason");
    char d[512];
    k8s_status_describe(&st, d, sizeof(d));
    assert_non_null(strstr(d, " [action: Required value; reason: Invalid value: \"\": can have "
                              "at most 128 characters]"));
    free(b);

    b = slurp("status_403_forbidden.json", &len);
    assert_int_equal(k8s_status_parse(b, len, &st, &e), 0);
    assert_int_equal(st.code, 403);
    assert_string_equal(st.reason, "Forbidden");
    assert_string_equal(st.details_kind, "events");
    assert_int_equal(st.n_causes, 0);
    k8s_status_describe(&st, d, sizeof(d));
    assert_string_equal(d, st.message);
    free(b);

    b = slurp("status_404_group.json", &len);
    assert_int_equal(k8s_status_parse(b, len, &st, &e), 0);
    assert_string_equal(st.details_name, ""); /* group not served: fall back to core/v1 */
    free(b);
    b = slurp("status_404_namespace.json", &len);
    assert_int_equal(k8s_status_parse(b, len, &st, &e), 0);
    assert_string_equal(st.details_name, "shop"); /* a missing namespace: no fallback */
    free(b);
    b = slurp("status_409_exists.json", &len);
    assert_int_equal(k8s_status_parse(b, len, &st, &e), 0);
    assert_string_equal(st.reason, "AlreadyExists");
    free(b);
    b = slurp("status_500_servertimeout.json", &len);
    assert_int_equal(k8s_status_parse(b, len, &st, &e), 0);
    assert_int_equal(st.retry_after_s, 2);
    free(b);
}

static void test_status_malformed(void **state)
{
    (void)state;
    static const char *const files[] = {"text_429_apf.txt", "status_wrong_kind.json",
                                        "status_malformed_causes.json", "status_duplicate_key.json",
                                        "pod_get.json"};
    struct k8s_status st;
    struct cla_error e = {0};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        size_t len;
        char *b = slurp(files[i], &len);
        assert_int_equal(k8s_status_parse(b, len, &st, &e), -EPROTO);
        free(b);
    }
    static const char *const bodies[] = {
        "",
        "[]",
        "{\"kind\":\"Status\",\"code\":\"422\"}",
        "{\"kind\":\"Status\",\"code\":1000}",
        "{\"kind\":\"Status\",\"message\":7}",
        "{\"kind\":\"Status\",\"details\":[]}",
        "{\"kind\":\"Status\",\"details\":{\"causes\":[1]}}",
        "{\"kind\":\"Status\",\"details\":{\"retryAfterSeconds\":-1}}",
        "{\"kind\":\"Status\"",
        "{\"kind\":\"Status\"}trailing",
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
        assert_int_equal(k8s_status_parse(bodies[i], strlen(bodies[i]), &st, &e), -EPROTO);
    /* Length is honoured: a valid prefix parses even if more bytes follow in the buffer. */
    const char *ok = "{\"kind\":\"Status\",\"code\":429}garbage";
    assert_int_equal(k8s_status_parse(ok, 28, &st, &e), 0);
    assert_int_equal(st.code, 429);
}

static void test_status_huge(void **state)
{
    (void)state;
    struct k8s_status st;
    struct cla_error e = {0};
    size_t big = K8S_STATUS_MAX + 1;
    char *b = malloc(big);
    assert_non_null(b);
    memset(b, ' ', big);
    assert_int_equal(k8s_status_parse(b, big, &st, &e), -E2BIG);
    free(b);

    /* 100 causes and a 5000-byte message: kept to the caps, counted, cut on display. */
    json_t *causes = json_array();
    for (int i = 0; i < 100; i++)
        json_array_append_new(causes, json_pack("{s:s,s:s,s:s}", "reason", "FieldValueInvalid",
                                                "field", "f", "message", "m"));
    char msg[5001];
    memset(msg, 'M', 5000);
    msg[5000] = '\0';
    msg[10] = '\x1b'; /* an escape sequence must not reach a terminal */
    json_t *root = json_pack("{s:s,s:i,s:s,s:{s:o}}", "kind", "Status", "code", 422, "message", msg,
                             "details", "causes", causes);
    char *s = json_dumps(root, JSON_COMPACT);
    assert_int_equal(k8s_status_parse(s, strlen(s), &st, &e), 0);
    assert_int_equal(st.n_causes, K8S_STATUS_CAUSES_MAX);
    assert_int_equal(st.n_causes_total, 100);
    assert_int_equal(strlen(st.message), sizeof(st.message) - 1);
    assert_int_equal(st.message[10], '?');
    char d[64];
    assert_int_equal(k8s_status_describe(&st, d, sizeof(d)), 63);
    char wide[2048];
    k8s_status_describe(&st, wide, sizeof(wide));
    assert_non_null(strstr(wide, "; +92 more]"));
    free(s);
    json_decref(root);
}

static void test_pod_parse(void **state)
{
    (void)state;
    size_t len;
    char uid[K8S_UID_MAX + 1];
    struct cla_error e = {0};
    char *b = slurp("pod_get.json", &len);
    assert_int_equal(k8s_pod_parse_uid(b, len, "orders-api-1", "shop", uid, &e), 0);
    assert_string_equal(uid, UID);
    assert_int_equal(k8s_pod_parse_uid(b, len, "orders-api-2", "shop", uid, &e), -EPROTO);
    assert_int_equal(k8s_pod_parse_uid(b, len, "orders-api-1", "other", uid, &e), -EPROTO);
    free(b);
    b = slurp("status_404_namespace.json", &len);
    assert_int_equal(k8s_pod_parse_uid(b, len, "orders-api-1", "shop", uid, &e), -EPROTO);
    free(b);
    static const char *const bad[] = {
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"}}",
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"\"}}",
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"a\\\"b\"}}",
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":5}}",
        "{\"kind\":\"Pod\",\"metadata\":[]}",
        "not json",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(k8s_pod_parse_uid(bad[i], strlen(bad[i]), "p", "n", uid, &e), -EPROTO);
    const char *good = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"n\","
                       "\"uid\":\"abc-123\"}}";
    assert_int_equal(k8s_pod_parse_uid(good, strlen(good), "p", "n", uid, &e), 0);
    assert_string_equal(uid, "abc-123");
    assert_int_equal(k8s_pod_parse_uid(good, K8S_RESPONSE_MAX + 1, "p", "n", uid, &e), -E2BIG);
}

/* Only the Event that was sent, in JSON, shows a create or a series PATCH stored: a proxy's
 * page, a body cut short, a Status or another object does not count as a reported Event. */
static void test_event_reply(void **state)
{
    (void)state;
    struct cla_error e = {0};
    const char *name = "orders-api-1.18d75b842b4ecd15";
    const char *good = "{\"kind\":\"Event\",\"apiVersion\":\"events.k8s.io/v1\",\"metadata\":"
                       "{\"name\":\"orders-api-1.18d75b842b4ecd15\",\"namespace\":\"shop\"}}";
    assert_int_equal(k8s_event_reply_check(good, strlen(good), name, &e), 0);
    const char *core = "{\"kind\":\"Event\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                       "\"orders-api-1.18d75b842b4ecd15\"},\"series\":{\"count\":2}}";
    assert_int_equal(k8s_event_reply_check(core, strlen(core), name, &e), 0);
    static const struct {
        const char *body, *why;
    } bad[] = {
        {"", "not JSON"},
        {"garbage", "not JSON"},
        {"<html><body>OK</body></html>", "not JSON"},
        {"{\"kind\":\"Event\",\"metadata\":{\"name\":\"orders-api-1.18d75b842b4ecd15\"}",
         "not JSON"},
        {"[]", "kind is not Event"},
        {"{}", "kind is not Event"},
        {"{\"kind\":\"Status\",\"code\":201}", "kind is not Event"},
        {"{\"kind\":7,\"metadata\":{\"name\":\"x\"}}", "kind is not Event"},
        {"{\"kind\":\"Event\"}", "metadata without name"},
        {"{\"kind\":\"Event\",\"metadata\":{\"name\":5}}", "metadata without name"},
        {"{\"kind\":\"Event\",\"metadata\":{\"name\":\"orders-api-1.1\"}}", "another Event"},
        {"{\"kind\":\"Event\",\"kind\":\"Event\",\"metadata\":{\"name\":"
         "\"orders-api-1.18d75b842b4ecd15\"}}",
         "not JSON"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_clear(&e);
        assert_int_equal(k8s_event_reply_check(bad[i].body, strlen(bad[i].body), name, &e),
                         -EPROTO);
        if (!strstr(e.msg, bad[i].why))
            fail_msg("'%s': %s", bad[i].body, e.msg);
    }
    size_t len;
    char *b = slurp("status_409_exists.json", &len);
    assert_int_equal(k8s_event_reply_check(b, len, name, &e), -EPROTO);
    free(b);
    b = slurp("pod_get.json", &len);
    assert_int_equal(k8s_event_reply_check(b, len, name, &e), -EPROTO);
    free(b);
    assert_int_equal(k8s_event_reply_check(good, K8S_RESPONSE_MAX + 1, name, &e), -E2BIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_fixtures), cmocka_unit_test(test_status_malformed),
        cmocka_unit_test(test_status_huge),     cmocka_unit_test(test_pod_parse),
        cmocka_unit_test(test_event_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
