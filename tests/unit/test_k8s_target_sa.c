/* SPDX-License-Identifier: Apache-2.0 */
/*
 * k8s_target_sa: the service account of the app next to an ephemeral container, read from a
 * real process chrooted into a fixture tree laid out as the kubelet lays it out (..data links,
 * /var/run a link to /run). What the target controls there is hostile: a link out of its root,
 * a FIFO, a namespace file with junk in it. Every refusal names the file, leaves no fd open,
 * and nothing is read once the pinned process has gone.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <cmocka.h>

#include "guards.h"
#include "report/k8s_target_sa.h"
#include "root.h"
#include "shell.h"
#include "target/target.h"
#include "base/util.h"

#define SA "run/secrets/kubernetes.io/serviceaccount"

static char base[64];
static char root[128];

/* A fresh root: /var/run -> /run and the service-account directory as the kubelet projects it,
 * each file a link through ..data into a timestamped directory. */
static void make_root(void)
{
    snprintf(base, sizeof(base), "/tmp/test_k8s_target_sa.XXXXXX");
    assert_non_null(mkdtemp(base));
    snprintf(root, sizeof(root), "%s/root", base);
    sh("mkdir -p '%s/var' '%s/%s/..2026_11_24_06_00_00.1' '%s/outside'", root, root, SA, base);
    sh("ln -s /run '%s/var/run'", root);
    sh("cd '%s/%s' && ln -s ..2026_11_24_06_00_00.1 ..data && "
       "printf 'tok-123' > ..data/token && printf 'CA PEM' > ..data/ca.crt && "
       "printf 'team-a\\n' > ..data/namespace && "
       "ln -s ..data/token token && ln -s ..data/ca.crt ca.crt && ln -s ..data/namespace namespace",
       root, SA);
    sh("printf 'host secret' > '%s/outside/secret'", base);
}

static void remove_root(void)
{
    sh("rm -rf '%s'", base);
}

/* Replaces one service-account file (the link) with what `cmd` makes under the name. */
static void replace(const char *name, const char *cmd)
{
    sh("cd '%s/%s' && rm -f '%s' && %s", root, SA, name, cmd);
}

/* The uid and gid the next app runs as; 0 leaves it root. */
static uid_t app_uid;

/* A process whose root is the fixture, pinned as attach pins its target. */
struct app {
    pid_t pid;
    int proc;
    struct target t;
};

static void app_start(struct app *a)
{
    int ready[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t parent = getpid();
    a->pid = fork();
    assert_true(a->pid >= 0);
    if (a->pid == 0) {
        if (chroot(root) < 0 || chdir("/") < 0)
            _exit(1);
        /* Dumpable again after the change of ids, as an app started as that user is. */
        if (app_uid && (setgroups(0, NULL) < 0 || setresgid(app_uid, app_uid, app_uid) < 0 ||
                        setresuid(app_uid, app_uid, app_uid) < 0 || prctl(PR_SET_DUMPABLE, 1) < 0))
            _exit(1);
        /* Gone with the test, even when a failed check ends it before app_stop(). Set after the
         * change of ids, which clears it. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
            _exit(1);
        (void)!write(ready[1], "y", 1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    a->proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(a->proc >= 0);
    struct cla_error e = {0};
    if (target_open(a->proc, a->pid, &a->t, &e) < 0)
        fail_msg("target_open: %s", e.msg);
}

static void app_stop(struct app *a)
{
    if (a->pid > 0) {
        kill(a->pid, SIGKILL);
        waitpid(a->pid, NULL, 0);
        a->pid = 0;
    }
}

static void app_close(struct app *a)
{
    app_stop(a);
    target_close(&a->t);
    close(a->proc);
}

/* Not inlined: its locals must not live in the frame that BOUNDED() jumps back into. */
__attribute__((noinline)) static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static void read_path(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, size - 1);
    assert_true(n >= 0);
    buf[n] = '\0';
    close(fd);
}

/* Opens the service account of a fresh app, expecting `want`; on failure the message must
 * mention `names` and no fd may be left open. */
static void expect_open(int want, const char *names, struct k8s_target_sa *ret)
{
    struct app a;
    app_start(&a);
    int before = count_fds();
    struct k8s_target_sa sa = {.token_fd = -1, .ca_fd = -1};
    struct cla_error e = {0};
    volatile int r = 1;
    BOUNDED(10, r = k8s_target_sa_open(&a.t, &sa, &e));
    if (r != want)
        fail_msg("k8s_target_sa_open gave %d, wanted %d: %s", (int)r, want, e.msg);
    if (r < 0) {
        assert_int_equal(count_fds(), before);
        assert_non_null(strstr(e.msg, "the target's service account"));
        if (names && !strstr(e.msg, names))
            fail_msg("message does not name %s: %s", names, e.msg);
    } else {
        assert_int_equal(count_fds(), before + 2);
        *ret = sa;
    }
    app_close(&a);
}

static void test_kubelet_layout(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("chroot() of the stand-in app");
    make_root();
    struct k8s_target_sa sa;
    expect_open(0, NULL, &sa);
    /* Read through the /proc/self/fd paths the Kubernetes client is given, after the app has
     * gone: the fds hold the files, no path of the target is resolved again. */
    char buf[64];
    read_path(sa.token_path, buf, sizeof(buf));
    assert_string_equal(buf, "tok-123");
    read_path(sa.ca_path, buf, sizeof(buf));
    assert_string_equal(buf, "CA PEM");
    assert_string_equal(sa.namespace_, "team-a");
    k8s_target_sa_close(&sa);
    assert_int_equal(sa.token_fd, -1);
    assert_int_equal(sa.ca_fd, -1);
    k8s_target_sa_close(&sa); /* twice: nothing left to close */
    remove_root();
}

static void test_namespace_kept_only_when_plausible(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("chroot() of the stand-in app");
    static const char *const junk[] = {
        "printf 'Team_A' > namespace",   /* not a DNS label */
        "printf '\\033[2J' > namespace", /* a terminal escape */
        "printf '' > namespace",         /* empty */
        "printf '%%070d' 0 > namespace", /* longer than a label */
        "mkfifo namespace",              /* would block a plain open */
        "ln -s /../../outside/secret namespace",
    };
    for (size_t i = 0; i < ARRAY_SIZE(junk); i++) {
        make_root();
        replace("namespace", junk[i]);
        struct k8s_target_sa sa;
        expect_open(0, NULL, &sa);
        if (sa.namespace_[0])
            fail_msg("'%s' kept as namespace '%s'", junk[i], sa.namespace_);
        k8s_target_sa_close(&sa);
        remove_root();
    }
    /* Absent: no namespace, still a service account. */
    make_root();
    replace("namespace", "true");
    struct k8s_target_sa sa;
    expect_open(0, NULL, &sa);
    assert_string_equal(sa.namespace_, "");
    k8s_target_sa_close(&sa);
    remove_root();
}

static void test_hostile_files(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("chroot() of the stand-in app");
    static const struct {
        const char *name, *cmd;
        int code, code_walk; /* with openat2; with the walk where it is missing (valgrind) */
    } cases[] = {
        {"token", "true", -ENOENT, -ENOENT},
        {"ca.crt", "true", -ENOENT, -ENOENT},
        /* Out of the root, absolute or by climbing: openat2 resolves it inside the root, where
         * nothing is; the walk refuses a climb above the root outright. */
        {"token", "ln -s \"$(dirname \"$PWD\")/../../../../outside/secret\" token", -ENOENT,
         -ENOENT},
        {"token", "ln -s ../../../../../../../../outside/secret token", -ENOENT, -EXDEV},
        {"ca.crt", "ln -s /proc/self/environ ca.crt", -ENOENT, -ENOENT},
        /* Not a regular file: refused without an open that could block. */
        {"ca.crt", "mkfifo ca.crt", -ENXIO, -ENXIO},
        {"token", "mkdir token", -EISDIR, -EISDIR},
        /* Above the caps (K8S_TOKEN_MAX + 64, K8S_CA_FILE_MAX): the client would read it whole. */
        {"token", "truncate -s 16449 token", -EFBIG, -EFBIG},
        {"ca.crt", "truncate -s 1048577 ca.crt", -EFBIG, -EFBIG},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        make_root();
        replace(cases[i].name, cases[i].cmd);
        print_message("%s: %s\n", cases[i].name, cases[i].cmd);
        bool walk = syscall(SYS_openat2, -1, NULL, NULL, 0) < 0 && errno == ENOSYS;
        expect_open(walk ? cases[i].code_walk : cases[i].code, cases[i].name, NULL);
        remove_root();
    }
}

/* The files are opened as the app's user: a name linked to a file only root may read (the
 * token, to have it sent as the bearer token to a server the target's own CA vouches for; the
 * CA; the namespace) is refused as the app would be refused, never read with our credentials. */
static void test_read_as_the_target(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("an app of uid 1000 and a file only root may read");
    app_uid = 1000;
    /* The kubelet's layout, which the app may read: opened as for a root app. */
    make_root();
    struct k8s_target_sa sa;
    expect_open(0, NULL, &sa);
    assert_string_equal(sa.namespace_, "team-a");
    k8s_target_sa_close(&sa);
    remove_root();
    static const char *const names[] = {"token", "ca.crt", "namespace"};
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        make_root();
        sh("printf 'team-b' > '%s/root-only' && chmod 0600 '%s/root-only'", root, root);
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "ln -s /root-only %s", names[i]);
        replace(names[i], cmd);
        print_message("%s -> a file only root may read\n", names[i]);
        if (strcmp(names[i], "namespace") != 0) {
            expect_open(-EACCES, names[i], NULL);
        } else {
            /* Optional: not read, so not kept; the namespace comes from elsewhere. */
            expect_open(0, NULL, &sa);
            assert_string_equal(sa.namespace_, "");
            k8s_target_sa_close(&sa);
        }
        remove_root();
    }
}

static int app_as_root(void **state)
{
    (void)state;
    app_uid = 0;
    return 0;
}

static void test_target_gone(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("chroot() of the stand-in app");
    make_root();
    struct app a;
    app_start(&a);
    app_stop(&a);
    struct k8s_target_sa sa = {.token_fd = -1, .ca_fd = -1};
    struct cla_error e = {0};
    assert_int_equal(k8s_target_sa_open(&a.t, &sa, &e), -ESRCH);
    assert_non_null(strstr(e.msg, "the target's service account"));
    assert_int_equal(sa.token_fd, -1);
    app_close(&a);
    remove_root();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubelet_layout),
        cmocka_unit_test(test_namespace_kept_only_when_plausible),
        cmocka_unit_test(test_hostile_files),
        cmocka_unit_test(test_target_gone),
        cmocka_unit_test_teardown(test_read_as_the_target, app_as_root),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
