/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What clrattach knows of its OpenTelemetry agent: the status file decoded as untrusted JSON
 * (every state, lists joined and capped, wrong types ignored, text rendered, malformed and
 * oversized input refused), the app's maps read for the agent and an SDK of the app's own, and
 * the settings checked (endpoint, protocol, resource attributes).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profset/otel_status.h"

static int parse(const char *s, struct otel_status *st)
{
    struct cla_error e = {0};
    int r = otel_status_parse(s, strlen(s), st, &e);
    if (r < 0)
        assert_true(e.code < 0 && e.msg[0]);
    return r;
}

static void test_started(void **state)
{
    (void)state;
    struct otel_status st;
    assert_int_equal(
        parse("{\"state\":\"started\",\"action\":\"start\",\"pid\":1,\"initialize_ms\":169,"
              "\"versions\":{\"agent\":\"0.1.0\",\"runtime\":\".NET 10.0.12\"},"
              "\"instrumentations\":[\"http_client\",\"aspnetcore\",\"runtime\",\"process\"],"
              "\"traces\":[\"http_client\",\"aspnetcore\"],\"metrics\":[\"runtime\"],"
              "\"exporter\":\"otlp\",\"protocol\":\"http/protobuf\","
              "\"endpoint\":\"http://127.0.0.1:4318\",\"service_name\":\"OtelWeb\"}",
              &st),
        0);
    assert_int_equal(st.state, OTEL_STATE_STARTED);
    assert_string_equal(otel_state_name(st.state), "started");
    assert_string_equal(st.instrumentations, "http_client,aspnetcore,runtime,process");
    assert_string_equal(st.traces, "http_client,aspnetcore");
    assert_string_equal(st.metrics, "runtime");
    assert_string_equal(st.exporter, "otlp");
    assert_string_equal(st.protocol, "http/protobuf");
    assert_string_equal(st.endpoint, "http://127.0.0.1:4318");
    assert_string_equal(st.service_name, "OtelWeb");
    assert_string_equal(st.agent_version, "0.1.0");
    assert_int_equal(st.initialize_ms, 169);
    assert_int_equal(st.stop_ms, -1);
    assert_int_equal(st.flushed, -1);
}

static void test_other_states(void **state)
{
    (void)state;
    struct otel_status st;
    assert_int_equal(parse("{\"state\":\"stopped\",\"flushed\":true,\"stop_ms\":12}", &st), 0);
    assert_int_equal(st.state, OTEL_STATE_STOPPED);
    assert_int_equal(st.flushed, 1);
    assert_int_equal(st.stop_ms, 12);
    assert_int_equal(parse("{\"state\":\"refused\",\"reason\":\"no endpoint\"}", &st), 0);
    assert_int_equal(st.state, OTEL_STATE_REFUSED);
    assert_string_equal(st.reason, "no endpoint");
    assert_int_equal(parse("{\"state\":\"failed\"}", &st), 0);
    assert_int_equal(st.state, OTEL_STATE_FAILED);
    assert_int_equal(parse("{\"state\":\"starting\"}", &st), 0);
    assert_int_equal(st.state, OTEL_STATE_STARTING);
    assert_int_equal(parse("{\"state\":\"stopping\"}", &st), 0);
    assert_int_equal(st.state, OTEL_STATE_STOPPING);
}

/* The app wrote it: anything may be there. */
static void test_hostile(void **state)
{
    (void)state;
    struct otel_status st = {.state = OTEL_STATE_STOPPED};
    assert_int_equal(parse("", &st), -EPROTO);
    assert_int_equal(parse("[1]", &st), -EPROTO);
    assert_int_equal(parse("{}", &st), -EPROTO);
    assert_int_equal(parse("{\"state\":\"running\"}", &st), -EPROTO);
    assert_int_equal(parse("{\"state\":7}", &st), -EPROTO);
    assert_int_equal(parse("{\"state\":\"started\",\"state\":\"failed\"}", &st), -EPROTO);
    assert_int_equal(parse("{\"state\":\"started\"} trailing", &st), -EPROTO);
    assert_int_equal(st.state, OTEL_STATE_STOPPED); /* untouched on failure */
    /* wrong types ignored, control characters rendered, a list capped */
    assert_int_equal(
        parse("{\"state\":\"started\",\"endpoint\":5,\"service_name\":\"a\\u001b[2Jb\","
              "\"traces\":[1,\"x\",null,\"y\"],\"initialize_ms\":-4,\"flushed\":1}",
              &st),
        0);
    assert_string_equal(st.endpoint, "");
    assert_null(strchr(st.service_name, 0x1b));
    assert_string_equal(st.traces, "x,y");
    assert_int_equal(st.initialize_ms, -1);
    assert_int_equal(st.flushed, -1);
    char list[4096] = "{\"state\":\"started\",\"metrics\":[";
    for (int i = 0; i < 40; i++)
        strcat(list, i ? ",\"m\"" : "\"m\"");
    strcat(list, "]}");
    assert_int_equal(parse(list, &st), 0);
    assert_int_equal(strlen(st.metrics), 2 * OTEL_STATUS_LIST_MAX - 1);
    /* over the cap */
    size_t big = OTEL_STATUS_MAX + 1;
    char *b = malloc(big);
    assert_non_null(b);
    memset(b, ' ', big);
    struct cla_error e = {0};
    assert_int_equal(otel_status_parse(b, big, &st, &e), -E2BIG);
    free(b);
}

static void test_maps(void **state)
{
    (void)state;
    struct otel_maps m;
    const char *maps =
        "7f00-7f01 r--p 00000000 00:2a 11 /usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/"
        "System.Private.CoreLib.dll\n"
        "7f01-7f02 r--p 00000000 00:2a 12 /tmp/clrattach-1234/ClrattachOtelAgent.dll\n"
        "7f02-7f03 r--p 00000000 00:2a 13 /tmp/clrattach-1234/OpenTelemetry.dll\n";
    otel_maps_scan(maps, strlen(maps), &m);
    assert_string_equal(m.agent_dir, "/tmp/clrattach-1234");
    assert_string_equal(m.sdk_path, ""); /* the agent's own copy */
    const char *own = "7f02-7f03 r--p 00000000 00:2a 13 /app/OpenTelemetry.dll (deleted)\n"
                      "7f02-7f03 r--p 00000000 00:2a 13 /app/OpenTelemetry.Api.dll\n"
                      "7f01-7f02 r--p 00000000 00:2a 12 /tmp/a/ClrattachOtelAgent.dll\n"
                      "7f02-7f03 r--p 00000000 00:2a 13 /tmp/a/OpenTelemetry.dll";
    otel_maps_scan(own, strlen(own), &m);
    assert_string_equal(m.agent_dir, "/tmp/a");
    assert_string_equal(m.sdk_path, "/app/OpenTelemetry.dll");
    const char *none = "7f02-7f03 r--p 00000000 00:2a 13 /app/MyOpenTelemetry.dll\n"
                       "7f02-7f03 r--p 00000000 00:2a 13 [heap]\nnonsense";
    otel_maps_scan(none, strlen(none), &m);
    assert_string_equal(m.agent_dir, "");
    assert_string_equal(m.sdk_path, "");
}

static void test_settings(void **state)
{
    (void)state;
    struct cla_error e = {0};
    assert_int_equal(otel_endpoint_check("http://otel-collector:4318", &e), 0);
    assert_int_equal(otel_endpoint_check("https://10.0.0.1", &e), 0);
    const char *bad[] = {NULL,         "",          "http://",      "https://",   "ftp://x",
                         "otel:4318",  "http:///x", "http://:4318", "http://a b", "http://a\"b",
                         "http://a\nb"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(otel_endpoint_check(bad[i], &e), -EINVAL);
        assert_non_null(strstr(e.hint, "--endpoint"));
    }
    assert_int_equal(otel_protocol_check("grpc", &e), 0);
    assert_int_equal(otel_protocol_check("http/protobuf", &e), 0);
    assert_int_equal(otel_protocol_check("http/json", &e), -EINVAL);
    assert_int_equal(otel_attributes_check(NULL, &e), 0);
    assert_int_equal(otel_attributes_check("a=b,c.d=e=f", &e), 0);
    assert_int_equal(otel_attributes_check("a=b,,c=d", &e), -EINVAL);
    assert_int_equal(otel_attributes_check("=b", &e), -EINVAL);
    assert_int_equal(otel_attributes_check("a=b\x01", &e), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_started),  cmocka_unit_test(test_other_states),
        cmocka_unit_test(test_hostile),  cmocka_unit_test(test_maps),
        cmocka_unit_test(test_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
