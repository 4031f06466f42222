/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guards.h"
#include "root.h"
#include "deliver/deliver.h"
#include "deliver/deliver_dir.h"

static char base[256];
static int rootfd = -1;
static const uint8_t payload[] = "\x7f"
                                 "ELF pretend shared object bytes";

static void path_of(char *out, size_t size, const char *rel)
{
    snprintf(out, size, "%s/%s", base, rel);
}

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/clrattach-deliver.XXXXXX");
    assert_non_null(mkdtemp(base));
    char p[512];
    path_of(p, sizeof(p), "root");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "root/tmp");
    assert_int_equal(mkdir(p, 01777), 0);
    path_of(p, sizeof(p), "root/trap");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "helper-own");
    assert_int_equal(mkdir(p, 0755), 0);
    path_of(p, sizeof(p), "root");
    rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(rootfd >= 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(rootfd);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    assert_int_equal(WEXITSTATUS(system(cmd)), 0);
    return 0;
}

static int count_entries(const char *rel)
{
    char p[512];
    path_of(p, sizeof(p), rel);
    DIR *d = opendir(p);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static struct deliver_opts opts(const char *dir, const uint8_t *data, size_t len)
{
    struct deliver_opts o = {
        .data = data, .len = len, .basename = "libclrprobe.so", .dir = dir, .uid = 1000};
    return o;
}

static void test_final_name(void **state)
{
    (void)state;
    char out[128];
    const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assert_int_equal(deliver_final_name("libclrprobe.so", hex, out, sizeof(out)), 0);
    assert_string_equal(out, "libclrprobe-0123456789abcdef.so");
    assert_int_equal(deliver_final_name("../../evil name;.so", hex, out, sizeof(out)), 0);
    assert_null(strchr(out, '/'));
    assert_null(strchr(out, ' '));
    assert_int_equal(deliver_final_name(".so", hex, out, sizeof(out)), 0);
    assert_string_equal(out, "p-0123456789abcdef.so");
    assert_int_equal(deliver_final_name("x", hex, out, 10), -ENAMETOOLONG);
    /* A managed assembly keeps its extension. */
    assert_int_equal(deliver_final_name("Hook.dll", hex, out, sizeof(out)), 0);
    assert_string_equal(out, "Hook-0123456789abcdef.dll");
    assert_int_equal(deliver_final_name("libx.dll.so", hex, out, sizeof(out)), 0);
    assert_string_equal(out, "libx.dll-0123456789abcdef.so");
}

static void test_deliver_and_reuse(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), 0);
    assert_false(r.reused);
    assert_true(strncmp(r.path, "/tmp/libclrprobe-", 17) == 0);
    char p[5000];
    snprintf(p, sizeof(p), "%s/root%s", base, r.path);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0444);
    assert_int_equal(st.st_uid, 1000);
    assert_int_equal((size_t)st.st_size, sizeof(payload));
    /* No temporary file is left behind. */
    assert_int_equal(count_entries("root/tmp"), 1);

    struct deliver_result r2;
    assert_int_equal(deliver_profiler(rootfd, &o, &r2, &e), 0);
    assert_true(r2.reused);
    assert_string_equal(r.path, r2.path);
    assert_int_equal(count_entries("root/tmp"), 1);
    assert_int_equal(unlink(p), 0);
}

static void test_never_overwrites(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    struct deliver_opts o = opts("/tmp", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), 0);
    char p[5000];
    snprintf(p, sizeof(p), "%s/root%s", base, r.path);
    /* Another file under our content-addressed name: different bytes. */
    assert_int_equal(chmod(p, 0644), 0);
    FILE *f = fopen(p, "w");
    fputs("different", f);
    fclose(f);
    assert_int_equal(chmod(p, 0444), 0);
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EEXIST);
    assert_non_null(strstr(e.msg, "different content"));
    assert_true(e.hint[0] != '\0');
    f = fopen(p, "r");
    char buf[32] = {0};
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "different"); /* untouched */
    /* Same bytes but writable by others: not trusted for reuse either. */
    f = fopen(p, "w");
    fwrite(payload, 1, sizeof(payload), f);
    fclose(f);
    assert_int_equal(chmod(p, 0666), 0);
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EEXIST);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(count_entries("root/tmp"), 0);
}

/* Writes `len` bytes of `data` to the final name `r->path` (read-only, as a delivery leaves it). */
static void put_final(const struct deliver_result *r, const uint8_t *data, size_t len)
{
    char p[5000];
    snprintf(p, sizeof(p), "%s/root%s", base, r->path);
    (void)chmod(p, 0644);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(p, 0444), 0);
}

/* Reuse compares every byte of the existing file with ours, past the read buffer too: one more
 * byte, one fewer, one changed near the end are each refused; the exact bytes are reused. */
static void test_reuse_compares_every_byte(void **state)
{
    (void)state;
    size_t len = 150000;
    uint8_t *big = malloc(len + 1), *other = malloc(len + 1);
    assert_non_null(big);
    assert_non_null(other);
    for (size_t i = 0; i <= len; i++)
        big[i] = (uint8_t)(i * 13 + (i >> 9));
    struct deliver_opts o = opts("/tmp", big, len);
    struct deliver_result r, r2;
    struct cla_error e = {0};
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), 0);
    assert_false(r.reused);
    assert_int_equal(deliver_profiler(rootfd, &o, &r2, &e), 0);
    assert_true(r2.reused);

    const struct {
        size_t len, flip; /* flip: index of a changed byte, or len for none */
    } cases[] = {{len + 1, len + 1}, {len - 1, len}, {len, len - 3}, {len, 70000}, {len, 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(other, big, len + 1);
        if (cases[i].flip < cases[i].len)
            other[cases[i].flip] ^= 0x40;
        put_final(&r, other, cases[i].len);
        memset(&e, 0, sizeof(e));
        assert_int_equal(deliver_profiler(rootfd, &o, &r2, &e), -EEXIST);
        if (!strstr(e.msg, "different content"))
            fail_msg("case %zu: %s", i, e.msg);
    }
    put_final(&r, big, len);
    assert_int_equal(deliver_profiler(rootfd, &o, &r2, &e), 0);
    assert_true(r2.reused);
    char p[5000];
    snprintf(p, sizeof(p), "%s/root%s", base, r.path);
    assert_int_equal(unlink(p), 0);
    free(big);
    free(other);
}

static void test_symlink_traps(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    /* Learn the final name, then plant a link there pointing into OUR root. */
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), 0);
    char p[5000], victim[600];
    snprintf(p, sizeof(p), "%s/root%s", base, r.path);
    assert_int_equal(unlink(p), 0);
    path_of(victim, sizeof(victim), "helper-own/victim.so");
    assert_int_equal(symlink(victim, p), 0);
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -ELOOP);
    assert_int_equal(access(victim, F_OK), -1); /* nothing created through the link */
    assert_int_equal(unlink(p), 0);

    /* The directory itself is a link (a target whose /tmp points elsewhere). */
    char link[600];
    path_of(link, sizeof(link), "root/linked");
    char dest[600];
    path_of(dest, sizeof(dest), "helper-own");
    assert_int_equal(symlink(dest, link), 0);
    struct deliver_opts o2 = opts("/linked/", payload, sizeof(payload));
    int rc = deliver_profiler(rootfd, &o2, &r, &e);
    assert_true(rc == -ELOOP || rc == -ENOTDIR);
    assert_int_equal(count_entries("helper-own"), 0);
    struct deliver_opts o3 = opts("/linked/sub/", payload, sizeof(payload));
    rc = deliver_profiler(rootfd, &o3, &r, &e);
    assert_true(rc == -ELOOP || rc == -ENOTDIR);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(count_entries("helper-own"), 0);
    assert_int_equal(count_entries("root/tmp"), 0);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct deliver_result r;
    struct cla_error e = {0};
    struct deliver_opts o = opts("/tmp/", payload, 0);
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EFBIG);
    o = opts("tmp/", payload, sizeof(payload));
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EINVAL);
    o = opts("/missing/", payload, sizeof(payload));
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -ENOENT);
    o = opts("/tmp/../trap/", payload, sizeof(payload));
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EINVAL);
    assert_int_equal(count_entries("root/trap"), 0);
}

/* The final name the payload gets in /tmp, learned from a real delivery (then removed), as a
 * target learns it: the name is content-addressed, so anyone with the .so can compute it. */
static void learn_final(char *ret_host_path, size_t size, char *ret_name, size_t name_size)
{
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), 0);
    snprintf(ret_host_path, size, "%s/root%s", base, r.path);
    snprintf(ret_name, name_size, "%s", strrchr(r.path, '/') + 1);
    assert_int_equal(unlink(ret_host_path), 0);
}

/* Something that is not a regular file under the final name: refused at once as "exists and is
 * not a regular file", naming what is there, never opened (a FIFO would block the open forever,
 * a device would run its driver), and left untouched. */
static void check_planted(const char *host_path, mode_t type, const char *shown)
{
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    volatile int rc = 0;
    BOUNDED(5, rc = deliver_profiler(rootfd, &o, &r, &e));
    assert_int_equal(rc, -EEXIST);
    if (!strstr(e.msg, "not a regular file") || !strstr(e.msg, shown))
        fail_msg("message does not say it is %s: %s", shown, e.msg);
    assert_true(e.hint[0] != '\0');
    struct stat st;
    assert_int_equal(lstat(host_path, &st), 0);
    assert_int_equal(st.st_mode & S_IFMT, type);
    assert_int_equal(count_entries("root/tmp"), 1); /* no temporary file left behind */
}

static void test_fifo_under_final_name(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    char p[5000], name[256];
    learn_final(p, sizeof(p), name, sizeof(name));
    assert_int_equal(mkfifo(p, 0666), 0);
    check_planted(p, S_IFIFO, "FIFO");
    assert_int_equal(unlink(p), 0);
}

static void test_dir_under_final_name(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    char p[5000], name[256];
    learn_final(p, sizeof(p), name, sizeof(name));
    assert_int_equal(mkdir(p, 0755), 0);
    check_planted(p, S_IFDIR, "directory");
    assert_int_equal(rmdir(p), 0);
}

static void test_chardev_under_final_name(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    char p[5000], name[256];
    learn_final(p, sizeof(p), name, sizeof(name));
    /* /dev/null's numbers: harmless if a broken delivery did open it. */
    assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(1, 3)), 0);
    check_planted(p, S_IFCHR, "character device");
    assert_int_equal(unlink(p), 0);
}

static void test_socket_under_final_name(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    char p[5000], name[256];
    learn_final(p, sizeof(p), name, sizeof(name));
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    /* sun_path is short: bind through the directory's /proc/self/fd view. */
    char dir[600];
    path_of(dir, sizeof(dir), "root/tmp");
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(dfd >= 0);
    int w = snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%.64s", dfd, name);
    assert_true(w > 0 && (size_t)w < sizeof(sa.sun_path) && strlen(name) <= 64);
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    check_planted(p, S_IFSOCK, "socket");
    close(s);
    close(dfd);
    assert_int_equal(unlink(p), 0);
}

/* The pty scenario, in a child that is a session leader without a terminal (as a container's
 * entrypoint is) and has a mount namespace of its own for the bind mount. Returns 0 when the
 * delivery refused the pty and the child still has no controlling terminal. */
static int pty_scenario(const char *name)
{
    alarm(10);
    if (setsid() < 0 || unshare(CLONE_NEWNS) < 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return 10;
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
        return 11;
    const char *slave = ptsname(master);
    char p[1024];
    snprintf(p, sizeof(p), "%s/root/tmp/%s", base, name);
    int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
        return 12;
    close(fd);
    /* devpts serves a slave only through its own dentry: bind it, as a mknod copy gives EIO. */
    if (!slave || mount(slave, p, NULL, MS_BIND, NULL) < 0)
        return 13;
    /* The root opened again inside this namespace, where the bind mount is. */
    snprintf(p, sizeof(p), "%s/root", base);
    int nroot = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (nroot < 0 || own_tty_nr() != 0)
        return 14;
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    int rc = deliver_profiler(nroot, &o, &r, &e);
    if (own_tty_nr() != 0) {
        fprintf(stderr, "the planted pty became our controlling terminal (%s)\n", e.msg);
        return 20;
    }
    if (rc != -EEXIST || !strstr(e.msg, "character device")) {
        fprintf(stderr, "deliver gave %d: %s\n", rc, e.msg);
        return 21;
    }
    return 0;
}

static void test_pty_never_controlling_terminal(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    char p[5000], name[256];
    learn_final(p, sizeof(p), name, sizeof(name));
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(pty_scenario(name));
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("pty scenario: %s %d", WIFEXITED(status) ? "exit" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    /* The bind mount went with the child's namespace; the placeholder file stays. */
    assert_int_equal(unlink(p), 0);
    assert_int_equal(count_entries("root/tmp"), 0);
}

/*
 * A racer in the target that does not know the name: an inotify watcher renames a FIFO over
 * every ".clrattach-*.tmp" that is created, as a hostile target can. Each delivery must end in
 * bounded time and either publish exactly our bytes or fail; a FIFO must never be published.
 */
struct racer {
    pthread_t thread;
    int inotify_fd;
    volatile int stop;
    int swaps;
};
static struct racer racer = {.inotify_fd = -1};

static void *racer_main(void *arg)
{
    (void)arg;
    char dir[600];
    path_of(dir, sizeof(dir), "root/tmp");
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (!racer.stop) {
        struct pollfd pfd = {.fd = racer.inotify_fd, .events = POLLIN};
        if (poll(&pfd, 1, 50) <= 0)
            continue;
        ssize_t n = read(racer.inotify_fd, buf, sizeof(buf));
        for (ssize_t off = 0; n > 0 && off < n;) {
            const struct inotify_event *ev = (const void *)(buf + off);
            off += (ssize_t)(sizeof(*ev) + ev->len);
            size_t len = ev->len ? strlen(ev->name) : 0;
            if (len < 5 || strncmp(ev->name, ".clrattach-", 11) != 0 ||
                strcmp(ev->name + len - 4, ".tmp") != 0)
                continue;
            char fifo[700], victim[700];
            snprintf(fifo, sizeof(fifo), "%s/racer-%d", dir, racer.swaps);
            snprintf(victim, sizeof(victim), "%s/%s", dir, ev->name);
            if (mkfifo(fifo, 0666) == 0 && rename(fifo, victim) == 0)
                racer.swaps++;
        }
    }
    return NULL;
}

/* After each trap: stop the racer if it runs, remove whatever the trap left in the target's /tmp
 * (also when the test failed half-way), so the next test starts clean. */
static int clean_tmp(void **state)
{
    (void)state;
    if (racer.inotify_fd >= 0) {
        racer.stop = 1;
        pthread_join(racer.thread, NULL);
        close(racer.inotify_fd);
        racer.inotify_fd = -1;
    }
    /* Trees too (a swept test leaves read-only ones): find deletes depth first, as root. */
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "find '%s/root/tmp' -mindepth 1 -delete", base);
    assert_int_equal(WEXITSTATUS(system(cmd)), 0);
    return 0;
}

static void test_tmp_swapped_by_racer(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    /* A large file keeps the window between create and publish wide: the racer wins often. */
    static uint8_t big[4 << 20];
    memset(big, 0x5a, sizeof(big));
    memcpy(big, payload, sizeof(payload));
    char dir[600];
    path_of(dir, sizeof(dir), "root/tmp");
    racer.inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    assert_true(racer.inotify_fd >= 0);
    assert_true(inotify_add_watch(racer.inotify_fd, dir, IN_CREATE) >= 0);
    racer.stop = 0;
    racer.swaps = 0;
    assert_int_equal(pthread_create(&racer.thread, NULL, racer_main, NULL), 0);
    int refused = 0, published = 0;
    for (int round = 0; round < 10; round++) {
        struct deliver_opts o = opts("/tmp/", big, sizeof(big));
        struct deliver_result r = {0};
        struct cla_error e = {0};
        volatile int rc = 0;
        BOUNDED(10, rc = deliver_profiler(rootfd, &o, &r, &e));
        char p[5000];
        struct stat st;
        if (rc == 0) {
            snprintf(p, sizeof(p), "%s/root%s", base, r.path);
            /* Published: it must be our file, regular, with our bytes. */
            assert_int_equal(lstat(p, &st), 0);
            assert_true(S_ISREG(st.st_mode));
            assert_int_equal((size_t)st.st_size, sizeof(big));
            assert_int_equal(unlink(p), 0);
            published++;
        } else {
            if (rc != -EIO || !strstr(e.msg, "replaced"))
                fail_msg("round %d: %d: %s", round, (int)rc, e.msg);
            refused++;
        }
        /* Never a FIFO under the name the runtime would be given. */
        DIR *d = opendir(dir);
        struct dirent *de;
        while ((de = readdir(d)))
            if (strncmp(de->d_name, "libclrprobe-", 12) == 0)
                fail_msg("round %d: '%s' published (%d)", round, de->d_name, (int)rc);
        closedir(d);
    }
    print_message("racer: %d swaps, %d refused, %d published\n", racer.swaps, refused, published);
}

/* A hostile target's move at the worst moment: `what` renamed over the temporary name right
 * before it gets its final name. */
enum swap_kind { SWAP_FIFO, SWAP_SAME_BYTES };
static void swap_tmp(int dirfd, const char *tmp_name, void *arg)
{
    enum swap_kind kind = *(enum swap_kind *)arg;
    char dir[600], other[700], victim[700];
    path_of(dir, sizeof(dir), "root/tmp");
    snprintf(other, sizeof(other), "%s/swapped-in", dir);
    snprintf(victim, sizeof(victim), "%s/%s", dir, tmp_name);
    if (kind == SWAP_FIFO) {
        assert_int_equal(mkfifo(other, 0666), 0);
    } else {
        /* Our very bytes, owned by the target's user: only the inode tells it apart. */
        int fd = open(other, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, payload, sizeof(payload)), (ssize_t)sizeof(payload));
        assert_int_equal(fchown(fd, 1000, (gid_t)-1), 0);
        close(fd);
    }
    assert_int_equal(renameat(AT_FDCWD, other, dirfd, tmp_name), 0);
}

static void check_swapped(enum swap_kind kind, bool force_rename)
{
    char p[5000], name[256];
    learn_final(p, sizeof(p), name, sizeof(name));
    struct deliver_test_hooks h = {
        .before_publish = swap_tmp, .arg = &kind, .force_rename = force_rename};
    deliver_set_test_hooks(&h);
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    volatile int rc = 0;
    BOUNDED(5, rc = deliver_profiler(rootfd, &o, &r, &e));
    deliver_set_test_hooks(NULL);
    assert_int_equal(rc, -EIO);
    if (!strstr(e.msg, "the target replaced"))
        fail_msg("unclear message: %s", e.msg);
    struct stat st;
    if (!force_rename) {
        /* Linked by fd: the swapped-in file never got the final name. */
        assert_int_equal(lstat(p, &st), -1);
    } else {
        /* By name: the rename carried the swapped-in file to the final name. It is refused, and
         * left alone (it is not ours to remove). */
        assert_int_equal(lstat(p, &st), 0);
        assert_int_equal(st.st_mode & S_IFMT, kind == SWAP_FIFO ? S_IFIFO : S_IFREG);
    }
    /* The target's file is never removed: exactly one entry, wherever the swap left it. */
    assert_int_equal(count_entries("root/tmp"), 1);
}

static void test_swap_fifo_before_link(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    check_swapped(SWAP_FIFO, false);
}

static void test_swap_same_bytes_before_link(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    check_swapped(SWAP_SAME_BYTES, false);
}

static void test_swap_fifo_before_rename(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    check_swapped(SWAP_FIFO, true);
}

/* Without hard links (forced), the rename path delivers and leaves no temporary file. */
static void test_publish_by_rename(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the delivered file is handed to uid 1000");
    struct deliver_test_hooks h = {.force_rename = true};
    deliver_set_test_hooks(&h);
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    int rc = deliver_profiler(rootfd, &o, &r, &e);
    deliver_set_test_hooks(NULL);
    assert_int_equal(rc, 0);
    assert_false(r.reused);
    char p[5000];
    snprintf(p, sizeof(p), "%s/root%s", base, r.path);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_nlink, 1);
    assert_int_equal(count_entries("root/tmp"), 1);
}

/* The bytes of the file at host path `p`, compared with the payload. */
static bool holds_payload(const char *p)
{
    uint8_t buf[sizeof(payload) + 1];
    FILE *f = fopen(p, "rb");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    return n == sizeof(payload) && memcmp(buf, payload, n) == 0;
}

/* What a squatter of uid 1001 plants under the content-addressed name of a uid-1000 target. */
enum squat_kind { SQUAT_SAME_BYTES, SQUAT_FIFO, SQUAT_SYMLINK, SQUAT_DIR };

static void plant(const char *p, enum squat_kind kind)
{
    char victim[600];
    path_of(victim, sizeof(victim), "helper-own");
    switch (kind) {
    case SQUAT_SAME_BYTES: {
        /* The public profiler itself, 0444: what reuse would accept from the target's uid. */
        int fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, payload, sizeof(payload)), (ssize_t)sizeof(payload));
        close(fd);
        break;
    }
    case SQUAT_FIFO: assert_int_equal(mkfifo(p, 0666), 0); break;
    case SQUAT_SYMLINK: assert_int_equal(symlink(victim, p), 0); break;
    case SQUAT_DIR: assert_int_equal(mkdir(p, 0755), 0); break;
    }
    assert_int_equal(lchown(p, 1001, 1001), 0);
}

/* A delivery into `dir` that succeeds under a fallback name, past an entry of uid `held_by`. */
static void deliver_past_squatter(const char *dir, uid_t held_by, struct deliver_result *r)
{
    struct deliver_opts o = opts(dir, payload, sizeof(payload));
    struct cla_error e = {0};
    volatile int rc = 0;
    BOUNDED(5, rc = deliver_profiler(rootfd, &o, r, &e));
    if (rc != 0)
        fail_msg("%d: %s", (int)rc, e.msg);
    assert_true(r->squatted);
    assert_int_equal(r->squatter_uid, held_by);
}

/*
 * Another uid (1001) sharing the target's directory holds the content-addressed name first, with
 * our very bytes or with a trap. The delivery must not fail (it used to end "not trusted for
 * reuse", for every attach, for ever): the profiler goes under a fallback name of ours, owned by
 * the target and verified; the squatter's entry is left exactly as it was; a second delivery
 * reuses that fallback; undo removes it like any file this run created.
 */
static void test_squatter_gets_fallback(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the squatter's file is handed to uid 1001");
    const enum squat_kind kinds[] = {SQUAT_SAME_BYTES, SQUAT_FIFO, SQUAT_SYMLINK, SQUAT_DIR};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        char usual[5000], name[256];
        learn_final(usual, sizeof(usual), name, sizeof(name));
        plant(usual, kinds[k]);
        struct stat before, after;
        assert_int_equal(lstat(usual, &before), 0);

        struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
        struct deliver_result r;
        struct cla_error e = {0};
        deliver_past_squatter("/tmp/", 1001, &r);
        assert_false(r.reused);
        /* "/tmp/<usual stem>-<16 hex>.so" */
        size_t stem = strlen(name) - 3;
        const char *fb = strrchr(r.path, '/') + 1;
        assert_int_equal(strlen(fb), stem + 1 + 16 + 3);
        assert_int_equal(strncmp(fb, name, stem), 0);
        assert_int_equal(fb[stem], '-');
        assert_int_equal(strspn(fb + stem + 1, "0123456789abcdef"), 16);
        assert_string_equal(fb + stem + 17, ".so");
        char p[5000];
        snprintf(p, sizeof(p), "%s/root%s", base, r.path);
        struct stat st;
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_uid, 1000);
        assert_int_equal(st.st_mode & 07777, 0444);
        assert_true(holds_payload(p));
        assert_int_equal(r.ino, (uint64_t)st.st_ino);

        /* The squatter's entry: the same inode, owner, mode and time. */
        assert_int_equal(lstat(usual, &after), 0);
        assert_int_equal(after.st_ino, before.st_ino);
        assert_int_equal(after.st_uid, 1001);
        assert_int_equal(after.st_mode, before.st_mode);
        assert_int_equal(after.st_ctim.tv_nsec, before.st_ctim.tv_nsec);
        if (kinds[k] == SQUAT_SAME_BYTES)
            assert_true(holds_payload(usual));

        /* Again: the fallback of ours is found and reused, nothing new is created. */
        struct deliver_result r2;
        assert_int_equal(deliver_profiler(rootfd, &o, &r2, &e), 0);
        assert_true(r2.reused && r2.squatted);
        assert_string_equal(r2.path, r.path);
        assert_int_equal(count_entries("root/tmp"), 2);

        /* Undo after a refused load takes the fallback, never the squatter's entry. */
        assert_int_equal(deliver_undo(rootfd, r.path, r.dev, r.ino, &e), 0);
        assert_int_equal(lstat(p, &st), -1);
        assert_int_equal(lstat(usual, &after), 0);
        assert_int_equal(after.st_ino, before.st_ino);
        assert_int_equal(count_entries("root/tmp"), 1);
        if (kinds[k] == SQUAT_DIR)
            assert_int_equal(rmdir(usual), 0);
        else
            assert_int_equal(unlink(usual), 0);
    }
    assert_int_equal(count_entries("helper-own"), 0); /* nothing through the squatter's link */
}

/* A fallback is reused only on the proof the usual name needs: the squatter's decoys under the
 * fallback pattern (its own, or with other bytes) are passed over, and a fresh one is made. */
static void test_squatter_decoys_not_reused(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the squatter's files are handed to uid 1001");
    char usual[5000], name[256];
    learn_final(usual, sizeof(usual), name, sizeof(name));
    plant(usual, SQUAT_SAME_BYTES);
    char decoy[5200];
    snprintf(decoy, sizeof(decoy), "%.*s-0123456789abcdef.so", (int)strlen(usual) - 3, usual);
    plant(decoy, SQUAT_SAME_BYTES);
    /* The target's own uid, but other bytes: not ours either. */
    char other[5200];
    snprintf(other, sizeof(other), "%.*s-fedcba9876543210.so", (int)strlen(usual) - 3, usual);
    FILE *f = fopen(other, "w");
    fputs("other bytes", f);
    fclose(f);
    assert_int_equal(chmod(other, 0444), 0);
    assert_int_equal(chown(other, 1000, 1000), 0);

    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), 0);
    assert_true(r.squatted);
    assert_false(r.reused);
    assert_null(strstr(r.path, "0123456789abcdef"));
    assert_null(strstr(r.path, "fedcba9876543210"));
    assert_int_equal(count_entries("root/tmp"), 4);
}

/* In a directory others may write without the sticky bit (the documented emptyDir, 0777), a
 * co-tenant can rename the target's own files, or root's, over our name: an entry we would refuse
 * there sends the profiler to a fallback name whoever owns it, and is left alone. The same
 * entries in the sticky /tmp are refused (test_never_overwrites, check_planted). */
static void test_shared_dir_any_conflict(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the planted file is handed to uid 1000");
    char dir[600];
    path_of(dir, sizeof(dir), "root/shared");
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    char usual[5000], name[256];
    learn_final(usual, sizeof(usual), name, sizeof(name));
    char p[5200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    for (int kind = 0; kind < 2; kind++) {
        if (kind == 0) {
            /* The target's own file with other bytes. */
            FILE *f = fopen(p, "w");
            fputs("the target's log", f);
            fclose(f);
            assert_int_equal(chown(p, 1000, 1000), 0);
        } else {
            assert_int_equal(mkfifo(p, 0644), 0); /* root's */
        }
        struct stat before, after, st;
        assert_int_equal(lstat(p, &before), 0);
        struct deliver_result r;
        deliver_past_squatter("/shared/", kind == 0 ? 1000 : 0, &r);
        assert_int_equal(strncmp(r.path, "/shared/libclrprobe-", 20), 0);
        assert_int_equal(strlen(r.path), strlen("/shared/") + strlen(name) + 17);
        char fb[5200];
        snprintf(fb, sizeof(fb), "%s/root%s", base, r.path);
        assert_true(holds_payload(fb));
        assert_int_equal(lstat(p, &after), 0);
        assert_int_equal(after.st_ino, before.st_ino);
        assert_int_equal(after.st_size, before.st_size);
        assert_int_equal(unlink(fb), 0);
        assert_int_equal(unlink(p), 0);
        assert_int_equal(lstat(p, &st), -1);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* The sweep's clock, set so that entries changed up to `old` are stale and later ones are not. */
static void set_sweep_clock(int64_t old_ctime_ns)
{
    struct deliver_test_hooks h = {.now_ns =
                                       old_ctime_ns + (int64_t)DELIVER_STALE_AFTER_S * 1000000000};
    deliver_set_test_hooks(&h);
}

static int64_t ctime_ns(const char *p)
{
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    return (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
}

/* Makes `rel` under the target's /tmp: a file, a directory (with a read-only subdirectory and a
 * file inside, as a delivery killed after filling leaves it) or a symlink, owned by `uid`.
 * Returns its ctime after the last change. */
static int64_t make_entry(const char *rel, char type, uid_t uid)
{
    char p[600], sub[700];
    snprintf(p, sizeof(p), "%s/root/tmp/%s", base, rel);
    if (type == 'f') {
        int fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "partial", 7), 7);
        close(fd);
    } else if (type == 'd') {
        assert_int_equal(mkdir(p, 0700), 0);
        snprintf(sub, sizeof(sub), "%s/lib", p);
        assert_int_equal(mkdir(sub, 0700), 0);
        snprintf(sub, sizeof(sub), "%s/lib/libx.so", p);
        int fd = open(sub, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(chown(sub, uid, uid), 0);
        snprintf(sub, sizeof(sub), "%s/lib", p);
        assert_int_equal(chown(sub, uid, uid), 0);
        assert_int_equal(chmod(sub, 0555), 0);
    } else {
        char victim[600];
        path_of(victim, sizeof(victim), "helper-own");
        assert_int_equal(symlink(victim, p), 0);
    }
    assert_int_equal(lchown(p, uid, uid), 0);
    return ctime_ns(p);
}

static bool exists_in_tmp(const char *rel)
{
    char p[600];
    struct stat st;
    snprintf(p, sizeof(p), "%s/root/tmp/%s", base, rel);
    return lstat(p, &st) == 0;
}

#define HEX_A "0123456789abcdef"
#define HEX_B "00112233445566ff"

/*
 * Temporaries left by killed deliveries are swept at the next delivery into the directory: only
 * ours beyond doubt (our exact name pattern, the right type, the target's uid) and older than
 * DELIVER_STALE_AFTER_S. Younger ones (a delivery at work), others' ones, other names and a
 * symlink under our pattern stay, and nothing is followed through the link.
 */
static void test_sweep_stale_temporaries(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the entries are handed to uid 1000 and 1001");
    char victim[600];
    path_of(victim, sizeof(victim), "helper-own/keep");
    assert_int_equal(mkdir(victim, 0755), 0);
    static const struct {
        const char *name;
        char type;
        uid_t uid;
        bool swept;
    } old[] = {
        {".clrattach-" HEX_A "-" HEX_B ".tmp", 'f', 1000, true},
        {".clrattach-" HEX_B "-" HEX_A ".tmpdir", 'd', 1000, true},
        {".clrattach-" HEX_A "-" HEX_A ".tmp", 'f', 1001, false},    /* another uid's */
        {".clrattach-" HEX_B "-" HEX_B ".tmpdir", 'd', 1001, false}, /* another uid's */
        {".clrattach-" HEX_A "-" HEX_A ".tmpdir", 'l', 1000, false}, /* a symlink */
        {".clrattach-" HEX_B "-" HEX_A ".tmp", 'l', 1000, false},    /* a symlink */
        {".clrattach-" HEX_B "-" HEX_B ".tmp", 'd', 1000, false},    /* not a file */
        {".clrattach-" HEX_A "-" HEX_B ".tmpdir", 'f', 1000, false}, /* not a directory */
        {".clrattach-0123456789ABCDEF-" HEX_B ".tmp", 'f', 1000, false},
        {".clrattach-" HEX_A "-" HEX_B ".tmpx", 'f', 1000, false},
        {".clrattach-" HEX_A ".tmp", 'f', 1000, false},
        {"clrattach-" HEX_A "-" HEX_B ".tmp", 'f', 1000, false},
        {"app-data.tmp", 'f', 1000, false},
    };
    int64_t newest_old = 0;
    for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++) {
        int64_t c = make_entry(old[i].name, old[i].type, old[i].uid);
        newest_old = c > newest_old ? c : newest_old;
    }
    /* Young ones: changed after the clock's bound. The kernel's timestamps are coarse. */
    usleep(50000);
    const char *young[] = {".clrattach-fedcba9876543210-" HEX_B ".tmp",
                           ".clrattach-fedcba9876543210-" HEX_A ".tmpdir"};
    for (size_t i = 0; i < 2; i++)
        assert_true(make_entry(young[i], i ? 'd' : 'f', 1000) > newest_old);

    set_sweep_clock(newest_old);
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    struct deliver_result r;
    struct cla_error e = {0};
    int rc = deliver_profiler(rootfd, &o, &r, &e);
    deliver_set_test_hooks(NULL);
    if (rc != 0)
        fail_msg("%d: %s", rc, e.msg);
    for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++)
        if (exists_in_tmp(old[i].name) == old[i].swept)
            fail_msg("'%s' (%c, uid %u) %s", old[i].name, old[i].type, (unsigned)old[i].uid,
                     old[i].swept ? "was left" : "was removed");
    for (size_t i = 0; i < 2; i++)
        if (!exists_in_tmp(young[i]))
            fail_msg("young '%s' was removed", young[i]);
    assert_int_equal(access(victim, F_OK), 0); /* nothing through the links */
    assert_int_equal(rmdir(victim), 0);
}

/* One sweep removes at most DELIVER_SWEEP_REMOVE_MAX entries; the next one goes on. */
static void test_sweep_bounded(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the entries are handed to uid 1000");
    const int n = DELIVER_SWEEP_REMOVE_MAX + 5;
    int64_t newest = 0;
    for (int i = 0; i < n; i++) {
        char name[96];
        snprintf(name, sizeof(name), ".clrattach-" HEX_A "-%016x.tmp", (unsigned)i);
        int64_t c = make_entry(name, 'f', 1000);
        newest = c > newest ? c : newest;
    }
    set_sweep_clock(newest);
    struct cla_error e = {0};
    int removed = deliver_sweep(rootfd, "/tmp", 1000, NULL, &e);
    assert_int_equal(removed, DELIVER_SWEEP_REMOVE_MAX);
    assert_int_equal(count_entries("root/tmp"), 5);
    assert_int_equal(deliver_sweep(rootfd, "/tmp", 1000, NULL, &e), 5);
    deliver_set_test_hooks(NULL);
    assert_int_equal(count_entries("root/tmp"), 0);
}

/* The hook for a run that must stop mid-way, or its parent: a nonce chosen before the delivery
 * names its temporary, and deliver_sweep() with it removes that run's temporaries however young,
 * and only those. */
static void seen_tmp(int dirfd, const char *tmp_name, void *arg)
{
    (void)dirfd;
    snprintf(arg, 96, "%s", tmp_name);
}

static void test_nonce_names_and_sweeps(void **state)
{
    (void)state;
    SKIP_UNLESS_ROOT("the entries are handed to uid 1000");
    char nonce[DELIVER_NONCE_LEN + 1], tmp[96] = "";
    assert_int_equal(deliver_new_nonce(nonce), 0);
    assert_int_equal(strlen(nonce), DELIVER_NONCE_LEN);
    struct deliver_test_hooks h = {.before_publish = seen_tmp, .arg = tmp};
    deliver_set_test_hooks(&h);
    struct deliver_opts o = opts("/tmp/", payload, sizeof(payload));
    o.nonce = nonce;
    struct deliver_result r;
    struct cla_error e = {0};
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), 0);
    deliver_set_test_hooks(NULL);
    char want[96];
    snprintf(want, sizeof(want), ".clrattach-%.16s-%s.tmp", r.sha256, nonce);
    assert_string_equal(tmp, want);
    o.nonce = "not-hex-at-all!!";
    assert_int_equal(deliver_profiler(rootfd, &o, &r, &e), -EINVAL);

    /* As a killed run leaves them: this run's file and tree, young; another run's, young too. */
    char mine_f[96], mine_d[96], other[96];
    snprintf(mine_f, sizeof(mine_f), ".clrattach-" HEX_A "-%s.tmp", nonce);
    snprintf(mine_d, sizeof(mine_d), ".clrattach-" HEX_B "-%s.tmpdir", nonce);
    snprintf(other, sizeof(other), ".clrattach-" HEX_A "-" HEX_B ".tmp");
    make_entry(mine_f, 'f', 1000);
    make_entry(mine_d, 'd', 1000);
    make_entry(other, 'f', 1000);
    assert_int_equal(deliver_sweep(rootfd, "/tmp", 1000, nonce, &e), 4);
    assert_false(exists_in_tmp(mine_f));
    assert_false(exists_in_tmp(mine_d));
    assert_true(exists_in_tmp(other));
    assert_int_equal(deliver_sweep(rootfd, "/tmp", 1000, "xyz", &e), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_final_name),
        cmocka_unit_test(test_deliver_and_reuse),
        cmocka_unit_test(test_never_overwrites),
        cmocka_unit_test(test_symlink_traps),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_reuse_compares_every_byte),
        cmocka_unit_test_teardown(test_fifo_under_final_name, clean_tmp),
        cmocka_unit_test_teardown(test_dir_under_final_name, clean_tmp),
        cmocka_unit_test_teardown(test_chardev_under_final_name, clean_tmp),
        cmocka_unit_test_teardown(test_socket_under_final_name, clean_tmp),
        cmocka_unit_test_teardown(test_pty_never_controlling_terminal, clean_tmp),
        cmocka_unit_test_teardown(test_tmp_swapped_by_racer, clean_tmp),
        cmocka_unit_test_teardown(test_swap_fifo_before_link, clean_tmp),
        cmocka_unit_test_teardown(test_swap_same_bytes_before_link, clean_tmp),
        cmocka_unit_test_teardown(test_swap_fifo_before_rename, clean_tmp),
        cmocka_unit_test_teardown(test_publish_by_rename, clean_tmp),
        cmocka_unit_test_teardown(test_squatter_gets_fallback, clean_tmp),
        cmocka_unit_test_teardown(test_squatter_decoys_not_reused, clean_tmp),
        cmocka_unit_test_teardown(test_shared_dir_any_conflict, clean_tmp),
        cmocka_unit_test_teardown(test_sweep_stale_temporaries, clean_tmp),
        cmocka_unit_test_teardown(test_sweep_bounded, clean_tmp),
        cmocka_unit_test_teardown(test_nonce_names_and_sweeps, clean_tmp),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
