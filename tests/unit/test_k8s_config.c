/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/k8s_config.h"

/* A fresh service-account dir per test, removed afterwards. */
static char sa[64];

static void put(const char *name, const char *content)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", sa, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static void drop(const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", sa, name);
    unlink(path);
}

static int setup(void **state)
{
    (void)state;
    snprintf(sa, sizeof(sa), "/tmp/clrattach-k8s-sa.XXXXXX");
    if (!mkdtemp(sa))
        return -1;
    put("token", "  eyJhbGciOiJSUzI1NiJ9.payload.sig \n");
    put("ca.crt", "-----BEGIN CERTIFICATE-----\n");
    put("namespace", "shop\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    drop("token");
    drop("ca.crt");
    drop("namespace");
    drop("token2");
    rmdir(sa);
    return 0;
}

static void test_join_host_port(void **state)
{
    (void)state;
    char url[K8S_URL_MAX + 1];
    struct cla_error e = {0};
    assert_int_equal(k8s_join_host_port("10.96.0.1", "443", url, sizeof(url), &e), 0);
    assert_string_equal(url, "https://10.96.0.1:443");
    assert_int_equal(k8s_join_host_port("fd00:10:96::1", "443", url, sizeof(url), &e), 0);
    assert_string_equal(url, "https://[fd00:10:96::1]:443");
    assert_int_equal(k8s_join_host_port("kubernetes.default.svc", "6443", url, sizeof(url), &e), 0);
    assert_string_equal(url, "https://kubernetes.default.svc:6443");
    assert_int_equal(k8s_join_host_port("10.96.0.1", "0", url, sizeof(url), &e), -EINVAL);
    assert_int_equal(k8s_join_host_port("10.96.0.1", "65536", url, sizeof(url), &e), -EINVAL);
    assert_int_equal(k8s_join_host_port("10.96.0.1", "44a", url, sizeof(url), &e), -EINVAL);
    assert_int_equal(k8s_join_host_port("10.96.0.1", "", url, sizeof(url), &e), -EINVAL);
    /* Anything that would move the token elsewhere: path, userinfo, fragment, brackets. */
    assert_int_equal(k8s_join_host_port("evil.example/x", "443", url, sizeof(url), &e), -EINVAL);
    assert_int_equal(k8s_join_host_port("u@evil", "443", url, sizeof(url), &e), -EINVAL);
    assert_int_equal(k8s_join_host_port("a#b", "443", url, sizeof(url), &e), -EINVAL);
    assert_int_equal(k8s_join_host_port("[::1]", "443", url, sizeof(url), &e), -EINVAL);
    assert_int_equal(k8s_join_host_port("", "443", url, sizeof(url), &e), -EINVAL);
    assert_int_equal(k8s_join_host_port("10.96.0.1", "443", url, 10, &e), -ENAMETOOLONG);
}

static void test_load_in_cluster(void **state)
{
    (void)state;
    char *envp[] = {"KUBERNETES_SERVICE_HOST=fd00:10:96::1", "KUBERNETES_SERVICE_PORT=443",
                    "HOME=/", NULL};
    struct k8s_config_opts o = {.sa_dir = sa};
    struct k8s_config c;
    struct cla_error e = {0};
    assert_int_equal(k8s_config_load_env(&o, envp, &c, &e), 0);
    assert_string_equal(c.api_url, "https://[fd00:10:96::1]:443");
    char want[128];
    snprintf(want, sizeof(want), "%s/token", sa);
    assert_string_equal(c.token_path, want);
    snprintf(want, sizeof(want), "%s/ca.crt", sa);
    assert_string_equal(c.ca_path, want);
    assert_string_equal(c.namespace_, "shop");
    assert_true(c.connect_timeout_ms > 0 && c.total_timeout_ms > c.connect_timeout_ms);
    assert_true(c.max_attempts >= 1 && c.retry_budget_ms >= c.total_timeout_ms);

    /* The namespace: env before the file, flag before the env; "default" without either. */
    char *envp2[] = {"KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=6443",
                     "POD_NAMESPACE=from-env", NULL};
    assert_int_equal(k8s_config_load_env(&o, envp2, &c, &e), 0);
    assert_string_equal(c.api_url, "https://10.0.0.1:6443");
    assert_string_equal(c.namespace_, "from-env");
    o.namespace_ = "from-flag";
    assert_int_equal(k8s_config_load_env(&o, envp2, &c, &e), 0);
    assert_string_equal(c.namespace_, "from-flag");
    o.namespace_ = NULL;
    drop("namespace");
    assert_int_equal(k8s_config_load_env(&o, envp, &c, &e), 0);
    assert_string_equal(c.namespace_, "default");
    put("namespace", "Not_A_Namespace\n");
    assert_int_equal(k8s_config_load_env(&o, envp, &c, &e), -EINVAL);
}

static void test_load_missing(void **state)
{
    (void)state;
    struct k8s_config_opts o = {.sa_dir = sa};
    struct k8s_config c;
    memset(&c, 0x5a, sizeof(c));
    struct cla_error e = {0};
    char *none[] = {"PATH=/bin", NULL};
    assert_int_equal(k8s_config_load_env(&o, none, &c, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "KUBERNETES_SERVICE_HOST"));
    assert_true(e.hint[0] != '\0');
    assert_int_equal((unsigned char)c.api_url[0], 0x5a); /* ret untouched on failure */
    char *host_only[] = {"KUBERNETES_SERVICE_HOST=10.0.0.1", NULL};
    assert_int_equal(k8s_config_load_env(&o, host_only, &c, &e), -ENOENT);
    char *empty[] = {"KUBERNETES_SERVICE_HOST=", "KUBERNETES_SERVICE_PORT=443", NULL};
    assert_int_equal(k8s_config_load_env(&o, empty, &c, &e), -ENOENT);
    assert_int_equal(k8s_config_load_env(&o, NULL, &c, &e), -ENOENT);

    char *envp[] = {"KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443", NULL};
    drop("token");
    assert_int_equal(k8s_config_load_env(&o, envp, &c, &e), -ENOENT);
    assert_non_null(strstr(e.hint, "ephemeral"));
    put("token", " \n\t\n");
    assert_int_equal(k8s_config_load_env(&o, envp, &c, &e), -EINVAL);
    put("token", "abc\n");
    drop("ca.crt");
    assert_int_equal(k8s_config_load_env(&o, envp, &c, &e), -ENOENT);
    put("ca.crt", "x");
    assert_int_equal(k8s_config_load_env(&o, envp, &c, &e), 0);
    struct k8s_config_opts dir_as_ca = {.sa_dir = sa, .ca_file = sa};
    assert_int_equal(k8s_config_load_env(&dir_as_ca, envp, &c, &e), -EINVAL);
}

static void test_api_url_flag(void **state)
{
    (void)state;
    struct k8s_config_opts o = {.sa_dir = sa, .api_url = "https://127.0.0.1:6443/"};
    struct k8s_config c;
    struct cla_error e = {0};
    assert_int_equal(k8s_config_load_env(&o, NULL, &c, &e), 0);
    assert_string_equal(c.api_url, "https://127.0.0.1:6443");
    static const char *const bad[] = {
        "http://127.0.0.1:6443", "https://",     "https://user@evil:443", "https://h:1/api",
        "https://h:1?x=1",       "https://h :1", "HTTPS://h:1",           "https://h%2f:1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        o.api_url = bad[i];
        assert_int_equal(k8s_config_load_env(&o, NULL, &c, &e), -EINVAL);
    }
}

static void test_token_parse(void **state)
{
    (void)state;
    char tok[K8S_TOKEN_MAX + 1];
    struct cla_error e = {0};
    const char *in = "\t abc.def-ghi_jkl \r\n";
    assert_int_equal(k8s_token_parse(in, strlen(in), tok, &e), 0);
    assert_string_equal(tok, "abc.def-ghi_jkl");
    assert_int_equal(k8s_token_parse("x", 1, tok, &e), 0);
    assert_string_equal(tok, "x");
    assert_int_equal(k8s_token_parse("", 0, tok, &e), -EINVAL);
    assert_int_equal(k8s_token_parse(" \n", 2, tok, &e), -EINVAL);
    /* Header injection and NULs inside the token are refused, not trimmed. */
    assert_int_equal(k8s_token_parse("a\r\nX-Evil: 1", 12, tok, &e), -EINVAL);
    assert_int_equal(k8s_token_parse("a b", 3, tok, &e), -EINVAL);
    assert_int_equal(k8s_token_parse("a\0b", 3, tok, &e), -EINVAL);
    assert_int_equal(k8s_token_parse("t\xc3\xa9", 3, tok, &e), -EINVAL);
    char *big = malloc(K8S_TOKEN_MAX + 2);
    assert_non_null(big);
    memset(big, 'a', K8S_TOKEN_MAX + 1);
    assert_int_equal(k8s_token_parse(big, K8S_TOKEN_MAX + 1, tok, &e), -EINVAL);
    assert_int_equal(k8s_token_parse(big, K8S_TOKEN_MAX, tok, &e), 0);
    free(big);
}

static void test_token_reread_policy(void **state)
{
    (void)state;
    struct k8s_config c = {0};
    snprintf(c.token_path, sizeof(c.token_path), "%s/token", sa);
    struct k8s_token *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    struct cla_error e = {0};
    put("token", "first\n");
    assert_int_equal(k8s_token_refresh(&c, t, false, 1000, &e), 1);
    assert_string_equal(t->value, "first");
    /* Rotated the way kubelet does it: a new file renamed over the path. */
    put("token2", "second\n");
    char from[128];
    snprintf(from, sizeof(from), "%s/token2", sa);
    assert_int_equal(rename(from, c.token_path), 0);
    assert_int_equal(k8s_token_refresh(&c, t, false, 1000 + K8S_TOKEN_REREAD_MS - 1, &e), 0);
    assert_string_equal(t->value, "first");
    assert_int_equal(k8s_token_refresh(&c, t, false, 1000 + K8S_TOKEN_REREAD_MS, &e), 1);
    assert_string_equal(t->value, "second");
    put("token", "third");
    assert_int_equal(k8s_token_refresh(&c, t, true, 1000 + K8S_TOKEN_REREAD_MS, &e), 1);
    assert_string_equal(t->value, "third");
    /* A failed re-read keeps the last good token. */
    put("token", "\n");
    assert_int_equal(k8s_token_refresh(&c, t, true, 500000, &e), -EINVAL);
    assert_string_equal(t->value, "third");
    drop("token");
    assert_int_equal(k8s_token_refresh(&c, t, true, 500000, &e), -ENOENT);
    assert_string_equal(t->value, "third");
    free(t);
}

static void test_pod_ref_from_env(void **state)
{
    (void)state;
    struct k8s_pod_ref p;
    struct cla_error e = {0};
    char *both[] = {"POD_NAME=generic",
                    "CLRATTACH_POD_NAME=orders-api-1",
                    "POD_NAMESPACE=shop",
                    "POD_UID=2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11",
                    "CLRATTACH_CONTAINER_NAME=app",
                    "HOSTNAME=host-name",
                    NULL};
    assert_int_equal(k8s_pod_ref_from_env(both, &p, &e), 0);
    assert_string_equal(p.name, "orders-api-1");
    assert_string_equal(p.namespace_, "shop");
    assert_string_equal(p.uid, "2f1c0a7e-5b9d-4c3e-8a61-0d6b2e9f4c11");
    assert_string_equal(p.container, "app");

    char *generic[] = {"POD_NAME=generic", "CLRATTACH_POD_NAME=", "HOSTNAME=h", NULL};
    assert_int_equal(k8s_pod_ref_from_env(generic, &p, &e), 0);
    assert_string_equal(p.name, "generic");
    assert_string_equal(p.namespace_, "");
    assert_string_equal(p.uid, "");
    assert_string_equal(p.container, "");

    char *host[] = {"HOSTNAME=orders-api-7d9c8b6f5-x2x7k", "POD_NAMESPACE=shop", NULL};
    assert_int_equal(k8s_pod_ref_from_env(host, &p, &e), 0);
    assert_string_equal(p.name, "orders-api-7d9c8b6f5-x2x7k");

    char *none[] = {"PATH=/bin", NULL};
    assert_int_equal(k8s_pod_ref_from_env(none, &p, &e), -ENOENT);
    assert_non_null(strstr(e.hint, "CLRATTACH_POD_NAME"));
    char *bad_name[] = {"POD_NAME=Orders_API", NULL};
    assert_int_equal(k8s_pod_ref_from_env(bad_name, &p, &e), -EINVAL);
    char *bad_ns[] = {"POD_NAME=p", "POD_NAMESPACE=a.b", NULL};
    assert_int_equal(k8s_pod_ref_from_env(bad_ns, &p, &e), -EINVAL);
    char *bad_uid[] = {"POD_NAME=p", "POD_UID=a\"b", NULL};
    assert_int_equal(k8s_pod_ref_from_env(bad_uid, &p, &e), -EINVAL);
    char *bad_ctr[] = {"POD_NAME=p", "CLRATTACH_CONTAINER_NAME=app}", NULL};
    assert_int_equal(k8s_pod_ref_from_env(bad_ctr, &p, &e), -EINVAL);
    /* A prefix of a variable name is not the variable. */
    char *prefix[] = {"POD_NAMEX=p", "POD_NAME", NULL};
    assert_int_equal(k8s_pod_ref_from_env(prefix, &p, &e), -ENOENT);
}

static void test_namespace_parse(void **state)
{
    (void)state;
    char ns[K8S_LABEL_MAX + 1];
    assert_int_equal(k8s_namespace_parse(" shop\n", 6, ns, NULL), 0);
    assert_string_equal(ns, "shop");
    /* Not a DNS label: it would go into URL paths. */
    assert_int_equal(k8s_namespace_parse("shop/../x", 9, ns, NULL), -EINVAL);
    assert_int_equal(k8s_namespace_parse("Shop", 4, ns, NULL), -EINVAL);
    assert_int_equal(k8s_namespace_parse("  \n", 3, ns, NULL), -EINVAL);
    char longer[K8S_LABEL_MAX + 2];
    memset(longer, 'a', sizeof(longer));
    assert_int_equal(k8s_namespace_parse(longer, sizeof(longer), ns, NULL), -EINVAL);
    /* The length is the buffer's: no terminator is needed, and bytes after it do not count. */
    assert_int_equal(k8s_namespace_parse("prodXYZ", 4, ns, NULL), 0);
    assert_string_equal(ns, "prod");
}

static void test_parse_env_reads_no_file(void **state)
{
    (void)state;
    char *env[] = {"KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443", NULL};
    struct k8s_config_opts o = {.sa_dir = "/nonexistent-sa-dir"};
    struct k8s_config c;
    struct cla_error e = {0};
    assert_int_equal(k8s_config_parse_env(&o, env, &c, &e), 0);
    assert_string_equal(c.api_url, "https://10.0.0.1:443");
    assert_string_equal(c.token_path, "/nonexistent-sa-dir/token");
    assert_string_equal(c.ca_path, "/nonexistent-sa-dir/ca.crt");
    assert_string_equal(c.namespace_, "");
    assert_true(c.max_attempts >= 1);

    char *with_ns[] = {"KUBERNETES_SERVICE_HOST=h", "KUBERNETES_SERVICE_PORT=6443",
                       "POD_NAMESPACE=shop", NULL};
    assert_int_equal(k8s_config_parse_env(&o, with_ns, &c, &e), 0);
    assert_string_equal(c.namespace_, "shop");

    char *bad_ns[] = {"KUBERNETES_SERVICE_HOST=h", "KUBERNETES_SERVICE_PORT=6443",
                      "POD_NAMESPACE=a/b", NULL};
    assert_int_equal(k8s_config_parse_env(&o, bad_ns, &c, &e), -EINVAL);
    char *none[] = {NULL};
    assert_int_equal(k8s_config_parse_env(&o, none, &c, &e), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_host_port),
        cmocka_unit_test_setup_teardown(test_load_in_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_url_flag, setup, teardown),
        cmocka_unit_test(test_token_parse),
        cmocka_unit_test_setup_teardown(test_token_reread_policy, setup, teardown),
        cmocka_unit_test(test_pod_ref_from_env),
        cmocka_unit_test(test_namespace_parse),
        cmocka_unit_test(test_parse_env_reads_no_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
