/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report/k8s_event.h"

#define UID "2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11"

static const struct k8s_pod_ref pod_full = {"orders-api-1", "shop", UID, "app"};

static struct k8s_event_spec spec(void)
{
    struct k8s_event_spec ev = {.reason = "ProfilerAttached",
                                .type = "Normal",
                                .action = "AttachProfiler",
                                .note = "Attached profiler to .NET pid 1",
                                .reporting_instance = "clrattach-node-a",
                                .event_time = {.tv_sec = 1790000000, .tv_nsec = 123456789}};
    return ev;
}

static json_t *build(const struct k8s_pod_ref *pod, const struct k8s_event_spec *ev, bool core)
{
    char *s = NULL;
    struct cla_error e = {0};
    assert_int_equal(k8s_event_build(pod, ev, core, &s, &e), 0);
    json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
    assert_non_null(j);
    free(s);
    return j;
}

static const char *str(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void test_build_events_v1(void **state)
{
    (void)state;
    struct k8s_event_spec ev = spec();
    json_t *j = build(&pod_full, &ev, false);
    assert_string_equal(str(j, "apiVersion"), "events.k8s.io/v1");
    assert_string_equal(str(j, "kind"), "Event");
    json_t *meta = json_object_get(j, "metadata");
    assert_int_equal(json_object_size(meta), 2);
    assert_string_equal(str(meta, "name"), "orders-api-1.18d75b842b4ecd15");
    assert_string_equal(str(meta, "namespace"), "shop");
    assert_string_equal(str(j, "eventTime"), "2026-09-21T14:13:20.123456Z");
    assert_string_equal(str(j, "reportingController"), "clrattach.dev/clrattach");
    assert_string_equal(str(j, "reportingInstance"), "clrattach-node-a");
    assert_string_equal(str(j, "action"), "AttachProfiler");
    assert_string_equal(str(j, "reason"), "ProfilerAttached");
    assert_string_equal(str(j, "type"), "Normal");
    assert_string_equal(str(j, "note"), "Attached profiler to .NET pid 1");
    json_t *ref = json_object_get(j, "regarding");
    assert_int_equal(json_object_size(ref), 6);
    assert_string_equal(str(ref, "apiVersion"), "v1");
    assert_string_equal(str(ref, "kind"), "Pod");
    assert_string_equal(str(ref, "name"), "orders-api-1");
    assert_string_equal(str(ref, "namespace"), "shop");
    assert_string_equal(str(ref, "uid"), UID);
    assert_string_equal(str(ref, "fieldPath"), "spec.containers{app}");
    /* Nothing else: the deprecated* fields would make the apiserver answer 422. */
    assert_int_equal(json_object_size(j), 11);
    json_decref(j);
}

static void test_build_core_v1(void **state)
{
    (void)state;
    struct k8s_event_spec ev = spec();
    ev.type = "Warning";
    ev.reason = "ProfilerAttachFailed";
    json_t *j = build(&pod_full, &ev, true);
    assert_string_equal(str(j, "apiVersion"), "v1");
    assert_string_equal(str(j, "kind"), "Event");
    assert_string_equal(str(json_object_get(j, "metadata"), "name"),
                        "orders-api-1.18d75b842b4ecd15");
    assert_string_equal(str(j, "eventTime"), "2026-09-21T14:13:20.123456Z");
    assert_string_equal(str(j, "reportingComponent"), "clrattach.dev/clrattach");
    assert_string_equal(str(j, "reportingInstance"), "clrattach-node-a");
    assert_string_equal(str(j, "message"), "Attached profiler to .NET pid 1");
    assert_string_equal(str(j, "type"), "Warning");
    assert_string_equal(str(j, "reason"), "ProfilerAttachFailed");
    json_t *ref = json_object_get(j, "involvedObject");
    assert_string_equal(str(ref, "uid"), UID);
    assert_string_equal(str(ref, "fieldPath"), "spec.containers{app}");
    assert_null(json_object_get(j, "regarding"));
    assert_null(json_object_get(j, "note"));
    assert_null(json_object_get(j, "reportingController"));
    assert_null(json_object_get(j, "source"));
    assert_null(json_object_get(j, "count"));
    assert_int_equal(json_object_size(j), 11);
    json_decref(j);
}

static void test_build_optional_fields(void **state)
{
    (void)state;
    struct k8s_pod_ref pod = {0};
    memset(pod.name, 'p', 200);
    memcpy(pod.namespace_, "default", 8);
    struct k8s_event_spec ev = spec();
    ev.note = NULL;
    ev.reporting_instance = NULL;
    json_t *j = build(&pod, &ev, false);
    json_t *ref = json_object_get(j, "regarding");
    assert_null(json_object_get(ref, "uid"));
    assert_null(json_object_get(ref, "fieldPath"));
    assert_null(json_object_get(j, "note"));
    /* "clrattach-" + 200 bytes of name, cut to the 128-byte limit. */
    const char *inst = str(j, "reportingInstance");
    assert_int_equal(strlen(inst), 128);
    assert_memory_equal(inst, "clrattach-ppp", 13);
    json_decref(j);
}

static void test_build_rejects(void **state)
{
    (void)state;
    char *s = NULL;
    struct cla_error e = {0};
    struct k8s_event_spec ev = spec();
    ev.type = "Info";
    assert_int_equal(k8s_event_build(&pod_full, &ev, false, &s, &e), -EINVAL);
    ev = spec();
    ev.reason = "";
    assert_int_equal(k8s_event_build(&pod_full, &ev, false, &s, &e), -EINVAL);
    char longer[130];
    memset(longer, 'R', 129);
    longer[129] = '\0';
    ev.reason = longer;
    assert_int_equal(k8s_event_build(&pod_full, &ev, false, &s, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "128"));
    ev = spec();
    ev.action = NULL;
    assert_int_equal(k8s_event_build(&pod_full, &ev, false, &s, &e), -EINVAL);
    ev = spec();
    ev.reason = "Bad\xff";
    assert_int_equal(k8s_event_build(&pod_full, &ev, false, &s, &e), -EINVAL);
    ev = spec();
    ev.event_time.tv_nsec = 1000000000L;
    assert_int_equal(k8s_event_build(&pod_full, &ev, false, &s, &e), -EINVAL);
    struct k8s_pod_ref pod = pod_full;
    memcpy(pod.namespace_, "Shop", 5);
    ev = spec();
    assert_int_equal(k8s_event_build(&pod, &ev, false, &s, &e), -EINVAL);
    pod = pod_full;
    memcpy(pod.name, "a/b", 4);
    ev = spec();
    assert_int_equal(k8s_event_build(&pod, &ev, false, &s, &e), -EINVAL);
    pod = pod_full;
    memcpy(pod.container, "app}x", 6);
    assert_int_equal(k8s_event_build(&pod, &ev, false, &s, &e), -EINVAL);
    assert_null(s);
}

static void test_utf8_copy(void **state)
{
    (void)state;
    char out[2048];
    assert_int_equal(k8s_utf8_copy("hello", 3, out), 3);
    assert_string_equal(out, "hel");
    assert_int_equal(k8s_utf8_copy("a\xc3\xa9", 2, out), 1); /* "aé" never splits the é */
    assert_string_equal(out, "a");
    assert_int_equal(k8s_utf8_copy("a\xc3\xa9", 3, out), 3);
    assert_int_equal(k8s_utf8_copy("\xf0\x9f\x98\x80!", 4, out), 4); /* U+1F600 */
    assert_int_equal(k8s_utf8_copy("\xf0\x9f\x98\x80!", 3, out), 0);
    assert_string_equal(out, "");
    /* Invalid input: stray continuation, overlong, surrogate, cut sequence, above U+10FFFF. */
    k8s_utf8_copy("x\x80y", 10, out);
    assert_string_equal(out, "x?y");
    k8s_utf8_copy("\xc0\x80", 10, out);
    assert_string_equal(out, "??");
    k8s_utf8_copy("\xed\xa0\x80", 10, out);
    assert_string_equal(out, "???");
    k8s_utf8_copy("a\xe2\x82", 10, out);
    assert_string_equal(out, "a??");
    k8s_utf8_copy("\xf4\x90\x80\x80", 10, out);
    assert_string_equal(out, "????");
    assert_int_equal(k8s_utf8_copy(NULL, 10, out), 0);
    /* The note case: 700 two-byte characters cut to 1024 bytes = 512 characters. */
    char note[1401];
    for (int i = 0; i < 700; i++)
        memcpy(note + 2 * i, "\xc3\xa9", 2);
    note[1400] = '\0';
    assert_int_equal(k8s_utf8_copy(note, 1024, out), 1024);
    assert_int_equal(k8s_utf8_copy(note, 1023, out), 1022);
    json_t *js = json_string(out); /* still valid UTF-8 after the cut */
    assert_non_null(js);
    json_decref(js);
}

static void test_microtime(void **state)
{
    (void)state;
    char buf[40];
    struct timespec t = {0, 0};
    assert_int_equal(k8s_format_microtime(&t, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "1970-01-01T00:00:00.000000Z");
    t = (struct timespec){1790000000, 123456789};
    assert_int_equal(k8s_format_microtime(&t, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "2026-09-21T14:13:20.123456Z");
    t = (struct timespec){1790000000, 999};
    assert_int_equal(k8s_format_microtime(&t, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "2026-09-21T14:13:20.000000Z");
    t = (struct timespec){1790000000, 1000000000L};
    assert_int_equal(k8s_format_microtime(&t, buf, sizeof(buf)), -ERANGE);
    t = (struct timespec){-1, 0};
    assert_int_equal(k8s_format_microtime(&t, buf, sizeof(buf)), -ERANGE);
    t = (struct timespec){253402300800LL, 0}; /* 10000-01-01 */
    assert_int_equal(k8s_format_microtime(&t, buf, sizeof(buf)), -ERANGE);
    t = (struct timespec){1790000000, 0};
    assert_int_equal(k8s_format_microtime(&t, buf, 27), -ENOBUFS);
    assert_int_equal(k8s_format_microtime(&t, buf, 28), 0);
}

static void test_event_name(void **state)
{
    (void)state;
    static const uint8_t rnd[16] = {0xde, 0xad, 0xbe, 0xef, 1, 2,  0xff, 4,
                                    0xff, 6,    7,    8,    9, 10, 11,   12};
    char buf[K8S_NAME_MAX + 1];
    struct timespec t = {1790000000, 123456789};
    assert_int_equal(k8s_event_name("orders-api-1", &t, rnd, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "orders-api-1.18d75b842b4ecd15");
    t = (struct timespec){0, 1};
    assert_int_equal(k8s_event_name("p", &t, rnd, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "p.1");
    /* 245 + ".18d75b842b4ecd15" > 253: a version-4 UUID instead (client-go's fallback). */
    char name[246];
    memset(name, 'a', 245);
    name[245] = '\0';
    t = (struct timespec){1790000000, 123456789};
    assert_int_equal(k8s_event_name(name, &t, rnd, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "deadbeef-0102-4f04-bf06-0708090a0b0c");
    assert_true(k8s_is_dns1123_subdomain(buf));
    memset(name, 'a', 236);
    name[236] = '\0';
    assert_int_equal(k8s_event_name(name, &t, rnd, buf, sizeof(buf)), 0);
    assert_int_equal(strlen(buf), 253);
    assert_int_equal(k8s_event_name("Bad_Name", &t, rnd, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "deadbeef-0102-4f04-bf06-0708090a0b0c");
    t.tv_sec = -5;
    assert_int_equal(k8s_event_name("p", &t, rnd, buf, sizeof(buf)), -ERANGE);
}

static void test_names(void **state)
{
    (void)state;
    assert_true(k8s_is_dns1123_subdomain("orders-api-1.18d0dc59c18be115"));
    assert_true(k8s_is_dns1123_subdomain("a"));
    assert_false(k8s_is_dns1123_subdomain(""));
    assert_false(k8s_is_dns1123_subdomain("-a"));
    assert_false(k8s_is_dns1123_subdomain("a-"));
    assert_false(k8s_is_dns1123_subdomain("a..b"));
    assert_false(k8s_is_dns1123_subdomain("A"));
    assert_false(k8s_is_dns1123_subdomain("a_b"));
    assert_true(k8s_is_dns1123_label("shop"));
    assert_false(k8s_is_dns1123_label("a.b"));
    char l64[65];
    memset(l64, 'a', 64);
    l64[64] = '\0';
    assert_false(k8s_is_dns1123_label(l64));
    l64[63] = '\0';
    assert_true(k8s_is_dns1123_label(l64));
    assert_true(k8s_is_qualified_name("clrattach.dev/clrattach"));
    assert_true(k8s_is_qualified_name("Plain_Name.v2"));
    assert_false(k8s_is_qualified_name("a/b/c"));
    assert_false(k8s_is_qualified_name("Example.com/x"));
    assert_false(k8s_is_qualified_name("/x"));
    assert_false(k8s_is_qualified_name("example.com/"));
    assert_false(k8s_is_qualified_name("x-"));
    assert_true(k8s_is_qualified_name(l64)); /* 63 characters */
    memset(l64, 'a', 64);
    assert_false(k8s_is_qualified_name(l64));
    assert_true(k8s_is_qualified_name(K8S_REPORTING_CONTROLLER));
}

static void test_series_patch(void **state)
{
    (void)state;
    struct cla_error e = {0};
    char *json = NULL;
    struct timespec t = {1790000000, 123456789};
    assert_int_equal(k8s_series_patch_build(2, &t, &json, &e), 0);
    assert_string_equal(
        json, "{\"series\":{\"count\":2,\"lastObservedTime\":\"2026-09-21T14:13:20.123456Z\"}}");
    free(json);
    json = NULL;
    t = (struct timespec){1790000360, 5000};
    assert_int_equal(k8s_series_patch_build(2147483647, &t, &json, &e), 0);
    assert_string_equal(json, "{\"series\":{\"count\":2147483647,"
                              "\"lastObservedTime\":\"2026-09-21T14:19:20.000005Z\"}}");
    free(json);

    /* The apiserver refuses a series below 2; a bad time never becomes a body. Failure
     * leaves *ret_json alone. */
    json = (char *)"untouched";
    assert_int_equal(k8s_series_patch_build(1, &t, &json, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "below 2"));
    assert_int_equal(k8s_series_patch_build(0, &t, &json, &e), -EINVAL);
    assert_int_equal(k8s_series_patch_build(-5, &t, &json, &e), -EINVAL);
    t = (struct timespec){1790000000, 1000000000L};
    assert_int_equal(k8s_series_patch_build(3, &t, &json, &e), -EINVAL);
    t = (struct timespec){-1, 0};
    assert_int_equal(k8s_series_patch_build(3, &t, &json, &e), -EINVAL);
    assert_string_equal(json, "untouched");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_events_v1),
        cmocka_unit_test(test_build_core_v1),
        cmocka_unit_test(test_build_optional_fields),
        cmocka_unit_test(test_build_rejects),
        cmocka_unit_test(test_utf8_copy),
        cmocka_unit_test(test_microtime),
        cmocka_unit_test(test_event_name),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_series_patch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
