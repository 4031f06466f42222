/* SPDX-License-Identifier: Apache-2.0 */
/* Finding a target's diagnostic socket: its TMPDIR listed through the target's root (each
 * listing cached per directory and credentials), the entry chosen, then opened by inode. */
#include "target/diag_socket.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/bounds.h"
#include "base/render.h"
#include "target/rootfs.h"
#include "base/util.h"

enum socket_state diag_socket_choose(const struct diag_socket_entry *entries, size_t n, pid_t nspid,
                                     uint64_t starttime, uid_t uid, struct diag_socket *ret)
{
    struct diag_socket s = {.state = SOCKET_ABSENT};
    const struct diag_socket_entry *best = NULL;
    bool best_own = false, best_keyed = false;
    for (size_t i = 0; i < n; i++) {
        const struct diag_socket_entry *en = &entries[i];
        /* The runtime names its socket for its namespace pid (its own getpid()), not the pid we
         * see from outside its pid namespace. */
        if (en->pid != nspid)
            continue;
        s.candidates++;
        /* Anyone who can write the TMPDIR can bind names in it: one owned by another user is
         * never the process's own, and must not hide the one that is. */
        bool own = en->owner == uid;
        /* The key is the runtime's own start time (field 22 of its /proc/self/stat, in clock
         * ticks): the same kernel gives us the same value, so an equal key proves the socket is
         * this process's and not a stale one left by an earlier process with the same pid. */
        bool keyed = en->key == starttime;
        /* Its own user's first; then the matching key; among the rest, the newest, as the
         * runtime's client. */
        if (!best || own > best_own ||
            (own == best_own &&
             (keyed > best_keyed || (keyed == best_keyed && en->mtime_ns > best->mtime_ns)))) {
            best = en;
            best_own = own;
            best_keyed = keyed;
        }
    }
    if (best) {
        memcpy(s.name, best->name, sizeof(s.name));
        s.key = best->key;
        s.file_type = best->file_type;
        s.owner = best->owner;
        /* A non-socket under the chosen name is reported as such, never connected to: the
         * runtime only ever binds a socket there. */
        s.stale = s.candidates - 1;
        s.state = !best->is_socket ? SOCKET_NOT_SOCKET
                  : !best_own      ? SOCKET_FOREIGN
                  : best_keyed     ? SOCKET_FOUND
                                   : SOCKET_FOUND_UNKEYED;
    }
    *ret = s;
    return s.state;
}

void diag_socket_unkeyed_detail(uint64_t key, uint64_t starttime, char *buf, size_t size)
{
    uint64_t off = key > starttime ? key - starttime : starttime - key;
    if (off <= DIAG_SOCKET_KEY_SKEW_TICKS)
        snprintf(buf, size,
                 "start time off by %llu tick%s: an emulator (qemu-user) or a time namespace",
                 (unsigned long long)off, off == 1 ? "" : "s");
    else
        snprintf(buf, size,
                 "the socket's key %llu is not the start time %llu: a time namespace, or the "
                 "socket of an earlier process with this pid",
                 (unsigned long long)key, (unsigned long long)starttime);
}

const char *diag_socket_file_type_name(unsigned file_type)
{
    return util_file_type_name(file_type);
}

struct cache_dir {
    uint64_t root_dev, root_ino, mntns;
    /* Listed as this user, with these groups and capabilities (creds.h): a process with other
     * credentials may see the directory otherwise, and gets a listing of its own. */
    uid_t uid;
    gid_t gid;
    uint64_t cap_eff;
    gid_t groups[PROC_GROUPS_MAX];
    size_t ngroups;
    char tmpdir[TARGET_PATH_MAX];
    int dir_errno;
    struct diag_socket_entry *entries;
    size_t n;
};

struct diag_socket_cache {
    struct cache_dir *dirs;
    size_t n, alloc;
};

struct diag_socket_cache *diag_socket_cache_new(void)
{
    return calloc(1, sizeof(struct diag_socket_cache));
}

void diag_socket_cache_free(struct diag_socket_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->dirs[i].entries);
    free(c->dirs);
    free(c);
}

/* A path in the target as a person may read it (render.h). */
static const char *shown(const char *raw, char *buf, size_t size)
{
    render_text(raw, strlen(raw), buf, size);
    return buf;
}

/* Lists dotnet-diagnostic-* entries of the target's TMPDIR. A missing or unreachable directory
 * is an answer (dir_errno), not a failure. */
static int list_dir(int rootfd, const char *tmpdir, struct cache_dir *d, struct cla_error *e)
{
    /* TMPDIR is the target's own value (already refused with "." or ".." components), resolved
     * as the runtime resolves it, links followed (TMPDIR=/var/run/app with /var/run -> /run),
     * but inside its root (RESOLVE_IN_ROOT): a link to "/" lists the target's /, never ours.
     * An unreachable TMPDIR is what `ps` reports for this process, hence no error (NULL). */
    int fd = rootfs_open_contained(rootfd, tmpdir, ROOTFS_DIR, O_RDONLY, NULL);
    if (fd < 0) {
        d->dir_errno = -fd;
        return 0;
    }
    char sh[256];
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int r = -errno;
        close(fd);
        return err_setsys(e, r, "fdopendir '%s'", shown(tmpdir, sh, sizeof(sh)));
    }
    size_t alloc = 0, seen = 0;
    struct dirent *de;
    int r = 0;
    /* readdir() returns NULL both at the end and on error; only errno tells them apart, so it
     * is cleared before each call: a stat below that failed (an entry gone meanwhile) must not
     * read as a failed listing at the end. */
    for (;;) {
        errno = 0;
        if (!(de = readdir(dir)))
            break;
        /* A hostile target can fill its /tmp with millions of entries to stall us. */
        if (++seen > TARGET_DIR_ENTRIES_MAX) {
            r = err_set(e, -E2BIG, "'%s' in the target holds more than %d entries",
                        shown(tmpdir, sh, sizeof(sh)), TARGET_DIR_ENTRIES_MAX);
            goto out;
        }
        /* Names are filtered before any stat: the entries cost nothing until one parses as
         * dotnet-diagnostic-<pid>-<key>-socket. */
        size_t len = strlen(de->d_name);
        pid_t pid;
        uint64_t key;
        if (len >= sizeof(d->entries[0].name) ||
            !proc_socket_name_parse(de->d_name, len, &pid, &key))
            continue;
        struct stat st;
        /* NOFOLLOW: a link named like a socket is listed as a link (then refused as not a
         * socket), never followed to whatever it names. */
        if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone meanwhile */
        if (d->n == alloc) {
            alloc = alloc ? alloc * 2 : 8;
            struct diag_socket_entry *ne = realloc(d->entries, alloc * sizeof(*ne));
            if (!ne) {
                r = err_set(e, -ENOMEM, "out of memory");
                goto out;
            }
            d->entries = ne;
        }
        struct diag_socket_entry *en = &d->entries[d->n++];
        memcpy(en->name, de->d_name, len + 1);
        en->pid = pid;
        en->key = key;
        /* mtime breaks ties between unkeyed candidates, as the runtime's own client does. */
        en->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        en->is_socket = S_ISSOCK(st.st_mode);
        en->file_type = st.st_mode & S_IFMT;
        en->owner = st.st_uid;
    }
    if (errno)
        r = err_setsys(e, -errno, "readdir '%s'", shown(tmpdir, sh, sizeof(sh)));
out:
    closedir(dir);
    return r;
}

/* Effective ids ([1] of the Uid:/Gid: lines) are what the listing was done as. */
static bool same_creds(const struct cache_dir *c, const struct proc_status *st)
{
    return c->uid == st->uid[1] && c->gid == st->gid[1] && c->cap_eff == st->cap_eff &&
           c->ngroups == st->ngroups &&
           memcmp(c->groups, st->groups, st->ngroups * sizeof(c->groups[0])) == 0;
}

int diag_socket_find(struct target *t, struct diag_socket_cache *cache, struct diag_socket *ret,
                     struct cla_error *e)
{
    int r = target_open_root(t, e);
    if (r < 0)
        return r;
    /* The root's device and inode, with the mount namespace, say which filesystem view a
     * listing belongs to: two containers may both have a /tmp/ that are different directories. */
    struct stat rst;
    if (fstat(t->rootfd, &rst) < 0)
        return err_setsys(e, -errno, "stat root of %d", (int)t->pid);

    struct cache_dir local = {0}, *d = NULL;
    if (cache) {
        for (size_t i = 0; i < cache->n; i++) {
            struct cache_dir *c = &cache->dirs[i];
            if (c->root_dev == rst.st_dev && c->root_ino == rst.st_ino && c->mntns == t->mntns &&
                t->mntns != 0 && same_creds(c, &t->status) && strcmp(c->tmpdir, t->tmpdir) == 0) {
                /* mntns 0 (unknown) never matches: a wrong cache hit would show one container
                 * another's sockets. */
                d = c;
                break;
            }
        }
    }
    if (!d) {
        local.root_dev = rst.st_dev;
        local.root_ino = rst.st_ino;
        local.mntns = t->mntns;
        local.uid = t->status.uid[1];
        local.gid = t->status.gid[1];
        local.cap_eff = t->status.cap_eff;
        local.ngroups = t->status.ngroups;
        memcpy(local.groups, t->status.groups, t->status.ngroups * sizeof(local.groups[0]));
        memcpy(local.tmpdir, t->tmpdir, sizeof(local.tmpdir));
        if ((r = list_dir(t->rootfd, t->tmpdir, &local, e)) < 0) {
            free(local.entries);
            return r;
        }
        if (cache) {
            if (cache->n == cache->alloc) {
                size_t na = cache->alloc ? cache->alloc * 2 : 8;
                struct cache_dir *nd = realloc(cache->dirs, na * sizeof(*nd));
                if (!nd) {
                    free(local.entries);
                    return err_set(e, -ENOMEM, "out of memory");
                }
                cache->dirs = nd;
                cache->alloc = na;
            }
            cache->dirs[cache->n] = local;
            d = &cache->dirs[cache->n++];
        } else {
            d = &local;
        }
    }

    /* With a cache, `d` points into cache->dirs and stays owned by it; without one, the listing
     * is ours and freed below. */
    if (d->dir_errno) {
        struct diag_socket s = {.state = SOCKET_DIR_ERROR, .dir_errno = d->dir_errno};
        *ret = s;
    } else {
        diag_socket_choose(d->entries, d->n, t->status.nspid, t->stat.starttime, t->status.uid[1],
                           ret);
    }
    if (!cache)
        free(local.entries);
    return 0;
}

int diag_socket_open(struct target *t, const struct diag_socket *s, struct cla_error *e)
{
    int r = target_open_root(t, e);
    if (r < 0)
        return r;
    /* The directory as the listing found it (links inside the root followed), then the name in
     * it, never followed: not bound by sun_path's 108 bytes, as the socket is connected through
     * the fd. */
    _cleanup_close_ int dir = rootfs_open_contained(t->rootfd, t->tmpdir, ROOTFS_DIR, O_PATH, e);
    if (dir < 0)
        return dir;
    /* O_PATH opens the inode without connecting or reading; no link is followed (a link planted
     * in the socket's place would make connect() follow it into OUR root), and anything but a
     * socket is refused by its type before any use. */
    _cleanup_close_ int fd = rootfs_open(dir, s->name, ROOTFS_SOCK, O_PATH, 0, e);
    if (fd < 0)
        return fd;
    /* The owner of the pinned inode, not of the name listed earlier: the name may have been
     * replaced since. The runtime binds its socket with its effective uid (its fsuid, which
     * follows it); the rule is equality, root included: a root runtime's socket is root's, and
     * a root-owned socket for a non-root process, or another uid's for a root one, is someone
     * else's bind in a directory they share. */
    struct stat st;
    if (fstat(fd, &st) < 0)
        return err_setsys(e, -errno, "stat the socket '%s'", s->name);
    uid_t uid = t->status.uid[1];
    if (st.st_uid != uid) {
        char sh[256];
        err_set(e, -EPERM,
                "the socket '%s%s' belongs to uid %u, but pid %d runs as uid %u: another user "
                "bound the name its runtime would use; clrattach does not connect to it",
                shown(t->tmpdir, sh, sizeof(sh)), s->name, (unsigned)st.st_uid, (int)t->pid,
                (unsigned)uid);
        err_hint(e,
                 "clrattach talks only to a socket of the app's own user; give the app a TMPDIR "
                 "that no other user can write, and find who bound the name (ss -xlp); an app "
                 "that changed its user after its runtime started must be restarted as that user");
        return -EPERM;
    }
    return util_take_fd(&fd);
}
