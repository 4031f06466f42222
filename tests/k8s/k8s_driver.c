/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test driver for lib/k8s_*: loads the configuration from flags (and the env), reports one
 * Event and prints the outcome as one JSON object on stdout. With --key it reports --repeat N
 * times through one series cache (k8s_report_event_dedup), the i-th report at --time-ns plus
 * i * --step-ns (minus with "-N") and with the i-th --key (cycling), stopping at the first error
 * (--alt-pod: odd reports are about that pod); "runs" then lists every report's outcome, with
 * its wall time in wall_us, and the top-level fields are those of the last one. Exit 0 on
 * success, 1 on a report error, 2 on a usage or configuration error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "report/k8s_client.h"
#include "report/k8s_series.h"
#include "report/k8s_config.h"
#include "base/util.h"

extern char **environ;

static long num(const char *s)
{
    uint64_t v;
    if (util_parse_u64(s, strlen(s), 1000000000u, &v) < 0) {
        fprintf(stderr, "k8s_driver: bad number '%s'\n", s);
        exit(2);
    }
    return (long)v;
}

static int print_result(int rc, const struct k8s_pod_ref *pod, const struct k8s_report_outcome *o,
                        const struct cla_error *e, json_t *runs)
{
    json_t *log = json_array();
    for (size_t i = 0; o && i < o->n_log; i++)
        json_array_append_new(log,
                              json_pack("{s:s,s:i,s:i,s:I}", "method", o->log[i].method, "status",
                                        o->log[i].http_status, "curl", o->log[i].curl_code,
                                        "slept_ms", (json_int_t)o->log[i].slept_ms));
    json_t *root = json_pack(
        "{s:i,s:s,s:s,s:s,s:s,s:i,s:i,s:b,s:s,s:o}", "rc", rc, "errno",
        rc < 0 && err_errno_name(-rc) ? err_errno_name(-rc) : "", "error", e->msg, "hint", e->hint,
        "uid", pod->uid, "http_status", o ? o->http_status : 0, "attempts", o ? o->attempts : 0,
        "used_core_v1", o ? o->used_core_v1 : 0, "event_name", o ? o->event_name : "", "log", log);
    json_object_set_new(root, "patched", json_boolean(o && o->patched));
    json_object_set_new(root, "series_count", json_integer(o ? o->series_count : 0));
    json_object_set_new(root, "runs", runs ? runs : json_array());
    char *s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    puts(s);
    free(s);
    json_decref(root);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"api-url", required_argument, NULL, 'u'},
                                         {"token-file", required_argument, NULL, 't'},
                                         {"ca-file", required_argument, NULL, 'c'},
                                         {"namespace", required_argument, NULL, 'n'},
                                         {"sa-dir", required_argument, NULL, 's'},
                                         {"reason", required_argument, NULL, 'r'},
                                         {"type", required_argument, NULL, 'y'},
                                         {"note", required_argument, NULL, 'm'},
                                         {"instance", required_argument, NULL, 'i'},
                                         {"time-ns", required_argument, NULL, 'T'},
                                         {"connect-ms", required_argument, NULL, 'C'},
                                         {"timeout-ms", required_argument, NULL, 'O'},
                                         {"attempts", required_argument, NULL, 'A'},
                                         {"budget-ms", required_argument, NULL, 'B'},
                                         {"repeat", required_argument, NULL, 'R'},
                                         {"key", required_argument, NULL, 'K'},
                                         {"step-ns", required_argument, NULL, 'S'},
                                         {"alt-pod", required_argument, NULL, 'P'},
                                         {NULL, 0, NULL, 0}};
    struct k8s_config_opts co = {0};
    struct k8s_event_spec ev = {.reason = "ProfilerAttached",
                                .type = "Normal",
                                .action = "AttachProfiler",
                                .note = "attached"};
    long connect_ms = -1, timeout_ms = -1, attempts = -1, budget_ms = -1, repeat = 1;
    const char *keys[128];
    size_t n_keys = 0;
    uint64_t step_ns = 1000000000u;
    bool step_back = false;
    const char *alt_pod = NULL; /* the pod of odd-numbered reports, uid looked up */
    clock_gettime(CLOCK_REALTIME, &ev.event_time);
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'u': co.api_url = optarg; break;
        case 't': co.token_file = optarg; break;
        case 'c': co.ca_file = optarg; break;
        case 'n': co.namespace_ = optarg; break;
        case 's': co.sa_dir = optarg; break;
        case 'r': ev.reason = optarg; break;
        case 'y': ev.type = optarg; break;
        case 'm': ev.note = optarg; break;
        case 'i': ev.reporting_instance = optarg; break;
        case 'T': {
            uint64_t v;
            if (util_parse_u64(optarg, strlen(optarg), UINT64_MAX, &v) < 0)
                return 2;
            ev.event_time.tv_sec = (time_t)(v / 1000000000u);
            ev.event_time.tv_nsec = (long)(v % 1000000000u);
            break;
        }
        case 'C': connect_ms = num(optarg); break;
        case 'O': timeout_ms = num(optarg); break;
        case 'A': attempts = num(optarg); break;
        case 'B': budget_ms = num(optarg); break;
        case 'R': repeat = num(optarg); break;
        case 'P': alt_pod = optarg; break;
        case 'K':
            if (n_keys == ARRAY_SIZE(keys))
                return 2;
            keys[n_keys++] = optarg;
            break;
        case 'S':
            /* "-N": each report N ns before the previous one (a clock stepped back). */
            step_back = optarg[0] == '-';
            if (util_parse_u64(optarg + step_back, strlen(optarg + step_back), UINT64_MAX,
                               &step_ns) < 0)
                return 2;
            break;
        default: return 2;
        }
    }
    struct cla_error e = {0};
    struct k8s_config cfg;
    struct k8s_pod_ref pod = {0};
    int rc = k8s_config_load(&co, &cfg, &e);
    if (rc < 0) {
        print_result(rc, &pod, NULL, &e, NULL);
        return 2;
    }
    if (connect_ms >= 0)
        cfg.connect_timeout_ms = connect_ms;
    if (timeout_ms >= 0)
        cfg.total_timeout_ms = timeout_ms;
    if (attempts >= 0)
        cfg.max_attempts = (int)attempts;
    if (budget_ms >= 0)
        cfg.retry_budget_ms = budget_ms;
    if ((rc = k8s_pod_ref_from_env(environ, &pod, &e)) < 0) {
        print_result(rc, &pod, NULL, &e, NULL);
        return 2;
    }
    struct k8s_report_outcome out;
    if (n_keys == 0) {
        rc = k8s_report_event(&cfg, &pod, &ev, &out, &e);
        return print_result(rc, &pod, &out, &e, NULL);
    }
    struct k8s_series_cache *cache = k8s_series_cache_new();
    json_t *runs = json_array();
    uint64_t t0 = (uint64_t)ev.event_time.tv_sec * 1000000000u + (uint64_t)ev.event_time.tv_nsec;
    for (long i = 0; i < repeat; i++) {
        uint64_t t = step_back ? t0 - (uint64_t)i * step_ns : t0 + (uint64_t)i * step_ns;
        ev.event_time.tv_sec = (time_t)(t / 1000000000u);
        ev.event_time.tv_nsec = (long)(t % 1000000000u);
        struct k8s_pod_ref alt = pod;
        if (alt_pod && i % 2 == 1) {
            snprintf(alt.name, sizeof(alt.name), "%s", alt_pod);
            alt.uid[0] = '\0';
        }
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        rc = k8s_report_event_dedup(&cfg, alt_pod && i % 2 == 1 ? &alt : &pod, &ev,
                                    keys[(size_t)i % n_keys], cache, &out, &e);
        clock_gettime(CLOCK_MONOTONIC, &b);
        /* The report's own wall time, for bench/run.sh: the first one pays for the CA load. */
        json_int_t wall_us = (json_int_t)(b.tv_sec - a.tv_sec) * 1000000 +
                             (json_int_t)(b.tv_nsec - a.tv_nsec) / 1000;
        json_array_append_new(runs, json_pack("{s:i,s:b,s:i,s:s,s:b,s:i,s:I}", "rc", rc, "patched",
                                              out.patched, "series_count", out.series_count,
                                              "event_name", out.event_name, "used_core_v1",
                                              out.used_core_v1, "attempts", out.attempts,
                                              "wall_us", wall_us));
        if (rc < 0)
            break;
    }
    k8s_series_cache_free(cache);
    return print_result(rc, &pod, &out, &e, runs);
}
