/* SPDX-License-Identifier: Apache-2.0 */
/* Container and pod IDs from /proc/<pid>/cgroup and the kubelet's containerID
 * (lib/target/cgroup_id.c); each fixture's format source is in tests/fixtures/cgroup/README.md. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "target/cgroup_id.h"

#define FIXTURES "tests/fixtures/cgroup/"
#define ID_A     "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
#define ID_B     "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
#define POD      "9c4a1b2e-5d6f-4a7b-8c9d-0e1f2a3b4c5d"

/* Parses a fixture and checks what it names. */
static void expect(const char *file, int want_r, const char *id, enum cgroup_runtime rt,
                   const char *pod)
{
    size_t len;
    char path[256];
    snprintf(path, sizeof(path), FIXTURES "%s", file);
    char *b = slurp(path, &len);
    struct cgroup_container c;
    memset(&c, 0x5a, sizeof(c));
    struct cla_error e = {0};
    int r = cgroup_id_parse(b, len, &c, &e);
    if (r != want_r)
        fail_msg("%s: %d (%s), want %d", file, r, e.msg, want_r);
    if (r == 1) {
        assert_string_equal(c.id, id);
        assert_int_equal(c.runtime, rt);
        assert_string_equal(c.pod_uid, pod);
    }
}

static void test_every_runtime(void **state)
{
    (void)state;
    expect("v2_cgroupfs_containerd.txt", 1, ID_A, CGROUP_RT_UNKNOWN, POD);
    expect("v1_cgroupfs_dockershim.txt", 1, ID_A, CGROUP_RT_UNKNOWN, POD);
    expect("v1_docker_cgroupfs.txt", 1, ID_A, CGROUP_RT_DOCKER, "");
    expect("v2_docker_systemd.txt", 1, ID_A, CGROUP_RT_DOCKER, "");
    expect("v2_systemd_containerd.txt", 1, ID_A, CGROUP_RT_CONTAINERD, POD);
    expect("v2_systemd_dockershim_guaranteed.txt", 1, ID_A, CGROUP_RT_DOCKER, POD);
    expect("v2_systemd_crio.txt", 1, ID_A, CGROUP_RT_CRIO, POD);
    expect("v2_cgroupfs_crio.txt", 1, ID_A, CGROUP_RT_CRIO, POD);
    expect("v2_cgroupns_relative.txt", 1, ID_A, CGROUP_RT_UNKNOWN, POD);
    /* The node's own container (ID_B) is outside; the innermost is the pod's. */
    expect("v2_kind_nested.txt", 1, ID_A, CGROUP_RT_CONTAINERD, POD);
    /* conmon runs in the pod's slice, but it is not the container. */
    expect("v2_systemd_crio_conmon.txt", 0, NULL, 0, NULL);
    expect("v2_host_process.txt", 0, NULL, 0, NULL);
    expect("v1_conflicting.txt", -EPROTO, NULL, 0, NULL);
}

static int parse_str(const char *s)
{
    struct cgroup_container c;
    struct cla_error e = {0};
    int r = cgroup_id_parse(s, strlen(s), &c, &e);
    if (r < 0)
        assert_true(e.msg[0] != '\0');
    return r;
}

static void test_malformed(void **state)
{
    (void)state;
    assert_int_equal(parse_str(""), -EPROTO);
    assert_int_equal(parse_str("0:/x\n"), -EPROTO);              /* two fields */
    assert_int_equal(parse_str("x::/\n"), -EPROTO);              /* hierarchy not a number */
    assert_int_equal(parse_str("-1::/\n"), -EPROTO);             /* nor a sign */
    assert_int_equal(parse_str("0:memory:/\n"), -EPROTO);        /* v2 line with controllers */
    assert_int_equal(parse_str("3::/\n"), -EPROTO);              /* v1 line without */
    assert_int_equal(parse_str("3:mem ory:/\n"), -EPROTO);       /* a space in the list */
    assert_int_equal(parse_str("0::x/" ID_A "\n"), -EPROTO);     /* relative path */
    assert_int_equal(parse_str("0::/a//" ID_A "\n"), -EPROTO);   /* empty component */
    assert_int_equal(parse_str("0::/a/../" ID_A "\n"), -EPROTO); /* '..' after a name */
    assert_int_equal(parse_str("0::/./" ID_A "\n"), -EPROTO);
    assert_int_equal(parse_str("0::/\n\n"), -EPROTO); /* empty line */
    char nul[] = "0::/docker/" ID_A "\n";
    nul[5] = '\0';
    struct cgroup_container c;
    assert_int_equal(cgroup_id_parse(nul, sizeof(nul) - 1, &c, NULL), -EPROTO);
    char *big = malloc(PROC_CGROUP_MAX + 1);
    assert_non_null(big);
    memset(big, '/', PROC_CGROUP_MAX + 1);
    assert_int_equal(cgroup_id_parse(big, PROC_CGROUP_MAX + 1, &c, NULL), -E2BIG);
    free(big);
    /* Accepted: no final newline, a path with ':' in it, the root. */
    assert_int_equal(parse_str("0::/docker/" ID_A), 1);
    assert_int_equal(parse_str("0::/a:b/" ID_A "\n"), 1);
    assert_int_equal(parse_str("0::/\n"), 0);
}

/* Near misses are not IDs: uppercase, 63 or 65 digits, a suffix, another prefix. */
static void test_near_misses(void **state)
{
    (void)state;
    char up[] = "0::/docker/" ID_A "\n";
    up[11] = 'C';
    assert_int_equal(parse_str(up), 0);
    assert_int_equal(parse_str("0::/docker/" ID_A "0\n"), 0);
    assert_int_equal(parse_str("0::/docker/" ID_A ".x\n"), 0);
    assert_int_equal(parse_str("0::/x/docker-" ID_A ".scopex\n"), 0);
    assert_int_equal(parse_str("0::/x/podman-" ID_A ".scope\n"), 0);
    char short_id[] = "0::/x/cri-containerd-" ID_A ".scope\n";
    memmove(short_id + 21, short_id + 22, sizeof(short_id) - 22);
    assert_int_equal(parse_str(short_id), 0);
}

static void test_status_id(void **state)
{
    (void)state;
    struct cgroup_status_id s;
    struct cla_error e = {0};
    const char *ok[] = {"docker://" ID_A, "containerd://" ID_A, "cri-o://" ID_A};
    enum cgroup_runtime rt[] = {CGROUP_RT_DOCKER, CGROUP_RT_CONTAINERD, CGROUP_RT_CRIO};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(cgroup_id_parse_status(ok[i], strlen(ok[i]), &s, &e), 0);
        assert_int_equal(s.runtime, rt[i]);
        assert_string_equal(s.id, ID_A);
    }
    const char *bad[] = {
        "",
        "docker://",
        "docker:/" ID_A,
        "crio://" ID_A,
        "containerd://" ID_A "a",
        "containerd://abc",
        "containerd://CA978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb",
        " docker://" ID_A};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err_clear(&e);
        assert_int_equal(cgroup_id_parse_status(bad[i], strlen(bad[i]), &s, &e), -EPROTO);
        assert_true(e.msg[0] != '\0');
    }
    /* The length is honoured: a prefix of a valid ID is not the ID. */
    assert_int_equal(cgroup_id_parse_status("docker://" ID_A, 9 + 63, &s, NULL), -EPROTO);
}

static int match(const char *cg, const char *status, const char *pod)
{
    struct cgroup_status_id s;
    assert_int_equal(cgroup_id_parse_status(status, strlen(status), &s, NULL), 0);
    return cgroup_id_matches(cg, strlen(cg), &s, pod, NULL);
}

static void test_matches(void **state)
{
    (void)state;
    const char *cg = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
                     "9c4a1b2e_5d6f_4a7b_8c9d_0e1f2a3b4c5d.slice/cri-containerd-" ID_A ".scope\n";
    assert_int_equal(match(cg, "containerd://" ID_A, POD), 1);
    assert_int_equal(match(cg, "containerd://" ID_A, NULL), 1);
    assert_int_equal(match(cg, "containerd://" ID_B, POD), 0);
    assert_int_equal(match(cg, "cri-o://" ID_A, POD), 0); /* another runtime's name */
    assert_int_equal(match(cg, "containerd://" ID_A, "00000000-0000-0000-0000-000000000000"), 0);
    /* A bare ID (cgroupfs) matches any runtime's containerID of the same ID. */
    assert_int_equal(match("0::/kubepods/pod" POD "/" ID_A "\n", "docker://" ID_A, POD), 1);
    /* The outer container of a nested node is not the pod's container. */
    size_t len;
    char *kind = slurp(FIXTURES "v2_kind_nested.txt", &len);
    assert_int_equal(match(kind, "docker://" ID_B, NULL), 0);
    assert_int_equal(match(kind, "containerd://" ID_A, POD), 1);
    /* An ID is never a substring of another: ID_A with one more digit is no container. */
    assert_int_equal(match("0::/kubepods/" ID_A "0\n", "containerd://" ID_A, NULL), 0);
    assert_int_equal(match("0::/x\n", "containerd://" ID_A, NULL), 0);
    assert_int_equal(match("bad", "containerd://" ID_A, NULL), -EPROTO);
    struct cgroup_status_id junk = {.runtime = CGROUP_RT_DOCKER, .id = "abc"};
    assert_int_equal(cgroup_id_matches(cg, strlen(cg), &junk, NULL, NULL), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_runtime), cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_near_misses),   cmocka_unit_test(test_status_id),
        cmocka_unit_test(test_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
