/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exported seccomp profile (clrattach seccomp-profile, deploy/seccomp/clrattach.json) as a
 * container runtime loads it: the JSON is parsed and every syscalls[] entry goes through
 * libseccomp the way runc 1.1 builds its filter (libcontainer/seccomp), so a profile that runc
 * or crun would refuse ("error adding seccomp rule for syscall socket: file exists") fails here,
 * without an engine. runc's steps, restated:
 *   - seccomp_init(default action), ERRNO taking defaultErrnoRet (EPERM when absent);
 *   - seccomp_arch_add for each of "architectures" not already in the filter;
 *   - for each entry, for each name: seccomp_syscall_resolve_name (unknown names are skipped);
 *     an action equal to the default one is skipped; no args: one rule; args: one rule with all
 *     of them (AND), unless two args test the same index, then one rule per arg (OR);
 *   - the filter is generated (seccomp_export_bpf), where a few more errors surface.
 * The filter is built and exported, never loaded: this process stays unconfined.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox/sandbox_policy.h"

/* "SCMP_ACT_ERRNO" + errnoRet and friends, as runc's getAction maps them. */
static int action_of(const char *name, const json_t *errno_ret, uint32_t *ret)
{
    int err = errno_ret ? (int)json_integer_value(errno_ret) : EPERM;
    if (strcmp(name, "SCMP_ACT_ALLOW") == 0)
        *ret = SCMP_ACT_ALLOW;
    else if (strcmp(name, "SCMP_ACT_ERRNO") == 0)
        *ret = SCMP_ACT_ERRNO((uint32_t)err);
    else if (strcmp(name, "SCMP_ACT_KILL") == 0 || strcmp(name, "SCMP_ACT_KILL_THREAD") == 0)
        *ret = SCMP_ACT_KILL;
    else if (strcmp(name, "SCMP_ACT_KILL_PROCESS") == 0)
        *ret = SCMP_ACT_KILL_PROCESS;
    else if (strcmp(name, "SCMP_ACT_LOG") == 0)
        *ret = SCMP_ACT_LOG;
    else
        return -EINVAL;
    return 0;
}

static int op_of(const char *name, enum scmp_compare *ret)
{
    static const struct {
        const char *name;
        enum scmp_compare op;
    } ops[] = {
        {"SCMP_CMP_NE", SCMP_CMP_NE},
        {"SCMP_CMP_LT", SCMP_CMP_LT},
        {"SCMP_CMP_LE", SCMP_CMP_LE},
        {"SCMP_CMP_EQ", SCMP_CMP_EQ},
        {"SCMP_CMP_GE", SCMP_CMP_GE},
        {"SCMP_CMP_GT", SCMP_CMP_GT},
        {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (name && strcmp(ops[i].name, name) == 0) {
            *ret = ops[i].op;
            return 0;
        }
    return -EINVAL;
}

/* libseccomp's names are the profile's without "SCMP_ARCH_", in lower case. 0: unknown. */
static uint32_t arch_token(const char *a)
{
    char lower[32] = "";
    if (!a || strncmp(a, "SCMP_ARCH_", 10) != 0)
        return 0;
    for (size_t k = 0; a[10 + k] && k + 1 < sizeof(lower); k++)
        lower[k] = (char)tolower((unsigned char)a[10 + k]);
    return seccomp_arch_resolve_name(lower);
}

/* Builds the runtime's filter from profile text. Returns 0, or the first libseccomp error with
 * a description of the failing step in `why`. */
static int runtime_load(const char *text, char *why, size_t why_len)
{
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        snprintf(why, why_len, "not JSON: %s", jerr.text);
        return -EINVAL;
    }
    int rc = 0;
    scmp_filter_ctx ctx = NULL;
    uint32_t def;
    if (action_of(json_string_value(json_object_get(root, "defaultAction")),
                  json_object_get(root, "defaultErrnoRet"), &def) < 0) {
        snprintf(why, why_len, "defaultAction");
        rc = -EINVAL;
        goto out;
    }
    ctx = seccomp_init(def);
    if (!ctx) {
        snprintf(why, why_len, "seccomp_init");
        rc = -ENOMEM;
        goto out;
    }
    /* Docker's profile format may give an "archMap" instead: the native entry's architecture
     * and its subArchitectures become the list (what dockerd hands to runc). */
    json_t *arches = json_deep_copy(json_object_get(root, "architectures"));
    const json_t *archmap = json_object_get(root, "archMap");
    for (size_t i = 0; !arches && i < json_array_size(archmap); i++) {
        const json_t *m = json_array_get(archmap, i);
        const char *a = json_string_value(json_object_get(m, "architecture"));
        if (arch_token(a) != seccomp_arch_native())
            continue;
        arches = json_array();
        json_array_append_new(arches, json_string(a));
        json_array_extend(arches, json_object_get(m, "subArchitectures"));
    }
    json_object_set_new(root, "architectures", arches ? arches : json_array());
    arches = json_object_get(root, "architectures");
    for (size_t i = 0; i < json_array_size(arches); i++) {
        const char *a = json_string_value(json_array_get(arches, i));
        uint32_t token = arch_token(a);
        if (!token) {
            snprintf(why, why_len, "unknown architecture %s", a ? a : "(null)");
            rc = -EINVAL;
            goto out;
        }
        if (seccomp_arch_exist(ctx, token) == -EEXIST && (rc = seccomp_arch_add(ctx, token)) < 0) {
            snprintf(why, why_len, "seccomp_arch_add(%s)", a);
            goto out;
        }
    }
    const json_t *syscalls = json_object_get(root, "syscalls");
    for (size_t i = 0; i < json_array_size(syscalls); i++) {
        const json_t *entry = json_array_get(syscalls, i);
        uint32_t act;
        if (action_of(json_string_value(json_object_get(entry, "action")),
                      json_object_get(entry, "errnoRet"), &act) < 0) {
            snprintf(why, why_len, "syscalls[%zu]: action", i);
            rc = -EINVAL;
            goto out;
        }
        const json_t *args = json_object_get(entry, "args");
        size_t nargs = json_array_size(args);
        struct scmp_arg_cmp conds[6];
        unsigned per_index[6] = {0};
        bool same_index = false;
        if (nargs > 6) {
            snprintf(why, why_len, "syscalls[%zu]: %zu args", i, nargs);
            rc = -EINVAL;
            goto out;
        }
        for (size_t k = 0; k < nargs; k++) {
            const json_t *arg = json_array_get(args, k);
            json_int_t index = json_integer_value(json_object_get(arg, "index"));
            enum scmp_compare op;
            if (index < 0 || index > 5 ||
                op_of(json_string_value(json_object_get(arg, "op")), &op) < 0) {
                snprintf(why, why_len, "syscalls[%zu].args[%zu]", i, k);
                rc = -EINVAL;
                goto out;
            }
            conds[k] = (struct scmp_arg_cmp){
                .arg = (unsigned)index,
                .op = op,
                .datum_a = (scmp_datum_t)json_integer_value(json_object_get(arg, "value")),
                .datum_b = (scmp_datum_t)json_integer_value(json_object_get(arg, "valueTwo")),
            };
            if (++per_index[index] > 1)
                same_index = true;
        }
        const json_t *names = json_object_get(entry, "names");
        for (size_t n = 0; n < json_array_size(names); n++) {
            const char *name = json_string_value(json_array_get(names, n));
            int nr = name ? seccomp_syscall_resolve_name(name) : __NR_SCMP_ERROR;
            if (nr == __NR_SCMP_ERROR || act == def)
                continue; /* runc: unknown to this libseccomp, or the default anyway */
            if (nargs == 0)
                rc = seccomp_rule_add(ctx, act, nr, 0);
            else if (!same_index)
                rc = seccomp_rule_add_array(ctx, act, nr, (unsigned)nargs, conds);
            else
                for (size_t k = 0; k < nargs && rc == 0; k++)
                    rc = seccomp_rule_add_array(ctx, act, nr, 1, &conds[k]);
            if (rc < 0) {
                snprintf(why, why_len, "error adding seccomp rule for syscall %s: %s", name,
                         strerror(-rc));
                goto out;
            }
        }
    }
    /* Generating the program, as runc does before loading it. */
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        snprintf(why, why_len, "/dev/null");
        goto out;
    }
    rc = seccomp_export_bpf(ctx, fd);
    close(fd);
    if (rc < 0)
        snprintf(why, why_len, "seccomp_export_bpf: %s", strerror(-rc));
out:
    if (ctx)
        seccomp_release(ctx);
    json_decref(root);
    return rc;
}

static char *profile_text(void)
{
    char *text = NULL;
    struct cla_error e = {0};
    assert_int_equal(sandbox_profile_json(&text, &e), 0);
    assert_non_null(text);
    return text;
}

/* The exported profile builds into a runtime's filter. */
static void test_exported_profile_loads(void **state)
{
    (void)state;
    char *text = profile_text();
    char why[256] = "";
    int rc = runtime_load(text, why, sizeof(why));
    if (rc != 0)
        fail_msg("a runtime would refuse the exported profile: %s (%d)", why, rc);
    free(text);
}

/* The checked-in deploy/seccomp/clrattach.json too (tests/deploy checks it equals the export). */
static void test_checked_in_profile_loads(void **state)
{
    (void)state;
    const char *path = getenv("CLRATTACH_PROFILE_FILE");
    json_error_t jerr;
    json_t *file = json_load_file(path ? path : "deploy/seccomp/clrattach.json", 0, &jerr);
    if (!file)
        skip(); /* run from another directory: the export above is the same text */
    char *text = json_dumps(file, 0);
    json_decref(file);
    char why[256] = "";
    int rc = runtime_load(text, why, sizeof(why));
    if (rc != 0)
        fail_msg("a runtime would refuse deploy/seccomp/clrattach.json: %s (%d)", why, rc);
    free(text);
}

/* The loader above is strict enough to see the mistake of the earlier profile: ALLOW and ERRNO
 * on socket() collide once SCMP_ARCH_X86 (socketcall) is in the filter. */
static void test_loader_sees_mixed_actions(void **state)
{
    (void)state;
    static const char mixed[] =
        "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":1,"
        "\"architectures\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\"],"
        "\"syscalls\":[{\"names\":[\"socket\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":"
        "[{\"index\":0,\"value\":2,\"valueTwo\":0,\"op\":\"SCMP_CMP_EQ\"}]},"
        "{\"names\":[\"socket\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":97,\"args\":"
        "[{\"index\":0,\"value\":16,\"valueTwo\":0,\"op\":\"SCMP_CMP_EQ\"}]}]}";
    char why[256] = "";
    assert_int_not_equal(runtime_load(mixed, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "socket"));
}

static bool in_names(const json_t *names, const char *name)
{
    for (size_t i = 0; i < json_array_size(names); i++)
        if (strcmp(json_string_value(json_array_get(names, i)), name) == 0)
            return true;
    return false;
}

/* The shape runtimes expect: "architectures" (native first, its 32-bit companions), ERRNO by
 * default with defaultErrnoRet, one action per syscall, at most one check per entry. */
static void test_profile_shape(void **state)
{
    (void)state;
    char *text = profile_text();
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    free(text);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "defaultAction")),
                        "SCMP_ACT_ERRNO");
    assert_int_equal(json_integer_value(json_object_get(root, "defaultErrnoRet")), EPERM);
    assert_null(json_object_get(root, "archMap"));
    const json_t *arches = json_object_get(root, "architectures");
#if defined(__x86_64__)
    assert_int_equal(json_array_size(arches), 3);
    assert_string_equal(json_string_value(json_array_get(arches, 0)), "SCMP_ARCH_X86_64");
    assert_true(in_names(arches, "SCMP_ARCH_X86"));
    assert_true(in_names(arches, "SCMP_ARCH_X32"));
#elif defined(__aarch64__)
    assert_int_equal(json_array_size(arches), 2);
    assert_string_equal(json_string_value(json_array_get(arches, 0)), "SCMP_ARCH_AARCH64");
    assert_true(in_names(arches, "SCMP_ARCH_ARM"));
#endif
    /* name -> action string ("SCMP_ACT_ALLOW" or "SCMP_ACT_ERRNO/<n>") */
    json_t *seen = json_object();
    const json_t *syscalls = json_object_get(root, "syscalls");
    bool socket_inet = false;
    for (size_t i = 0; i < json_array_size(syscalls); i++) {
        const json_t *entry = json_array_get(syscalls, i);
        const char *action = json_string_value(json_object_get(entry, "action"));
        assert_non_null(action);
        assert_true(json_array_size(json_object_get(entry, "args")) <= 1);
        char act[64];
        snprintf(act, sizeof(act), "%s/%lld", action,
                 (long long)json_integer_value(json_object_get(entry, "errnoRet")));
        if (strcmp(action, "SCMP_ACT_ERRNO") == 0)
            assert_int_not_equal(json_integer_value(json_object_get(entry, "errnoRet")), EPERM);
        const json_t *names = json_object_get(entry, "names");
        for (size_t n = 0; n < json_array_size(names); n++) {
            const char *name = json_string_value(json_array_get(names, n));
            const char *before = json_string_value(json_object_get(seen, name));
            if (before && strcmp(before, act) != 0)
                fail_msg("'%s' has two actions in the profile: %s and %s", name, before, act);
            json_object_set_new(seen, name, json_string(act));
            if (strcmp(name, "socket") == 0 &&
                json_integer_value(json_object_get(
                    json_array_get(json_object_get(entry, "args"), 0), "value")) == AF_INET)
                socket_inet = true;
        }
    }
    assert_true(socket_inet);
    assert_string_equal(json_string_value(json_object_get(seen, "socket")), "SCMP_ACT_ALLOW/0");
    /* clone3 keeps its ENOSYS (glibc falls back to clone): it has no allow to collide with */
    assert_string_equal(json_string_value(json_object_get(seen, "clone3")), "SCMP_ACT_ERRNO/38");
    json_decref(seen);
    json_decref(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exported_profile_loads),
        cmocka_unit_test(test_checked_in_profile_loads),
        cmocka_unit_test(test_loader_sees_mixed_actions),
        cmocka_unit_test(test_profile_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
