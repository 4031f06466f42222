/* SPDX-License-Identifier: Apache-2.0 */
#include "flow/attach.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "target/creds.h"
#include "deliver/deliver.h"
#include "deliver/deliver_dir.h"
#include "profset/depcheck.h"
#include "target/diag_socket.h"
#include "runtime/hresult.h"
#include "runtime/ipc_conn.h"
#include "deliver/placeholders.h"
#include "deliver/placement.h"
#include "profset/profset.h"
#include "target/rootfs.h"
#include "target/proc_parse.h"
#include "base/render.h"
#include "runtime/runtime_info.h"
#include "target/target.h"
#include "base/util.h"

#ifndef ST_VALID
#define ST_VALID 0x0020 /* f_flags is filled (Linux 2.6.36) */
#endif

static const struct {
    const char *name;
    int exit_code;
} outcomes[] = {
    [ATTACH_OK] = {"attached", 0},
    [ATTACH_ALREADY_ACTIVE] = {"already_active", 3},
    [ATTACH_NOT_FOUND] = {"target_not_found", 4},
    [ATTACH_NOT_DOTNET] = {"not_dotnet", 4},
    [ATTACH_PERMISSION] = {"permission_denied", 5},
    [ATTACH_DELIVERY] = {"delivery_failed", 6},
    [ATTACH_LOAD_FAILED] = {"load_failed", 7},
    [ATTACH_NOT_READY] = {"runtime_not_ready", 8},
    [ATTACH_PROTOCOL] = {"protocol_error", 9},
    [ATTACH_USAGE] = {"usage_error", 2},
    [ATTACH_INTERNAL] = {"internal_error", 1},
    [ATTACH_INTERRUPTED] = {"interrupted", 11},
    [ATTACH_TARGET_DIED] = {"target_died", 12},
    [ATTACH_DEPENDENCY] = {"dependency_missing", 13},
};

const char *const attach_rid_sources[ATTACH_RID_SOURCES] = {"--rid", "runtime", "maps+exe"};

const char *attach_outcome_name(enum attach_outcome o)
{
    return (unsigned)o < ARRAY_SIZE(outcomes) ? outcomes[o].name : "internal_error";
}

int attach_outcome_exit_code(enum attach_outcome o)
{
    return (unsigned)o < ARRAY_SIZE(outcomes) ? outcomes[o].exit_code : 1;
}

/* Maps an errno from inspecting or reaching the target to an outcome. Whatever is malformed
 * here (-EPROTO, -EINVAL from a path the target chose) is the target's data breaking a rule,
 * never the operator's usage: the operator's inputs are checked before the target is read. */
static enum attach_outcome outcome_of_errno(int r)
{
    switch (-r) {
    case ESRCH: return ATTACH_NOT_FOUND;
    case EACCES:
    case EPERM: return ATTACH_PERMISSION;
    case ENOMEM: return ATTACH_INTERNAL;
    default: return ATTACH_PROTOCOL;
    }
}

/* A target string (a path, a name) as a person may read it: rendered (render.h). */
static const char *shown(const char *raw, char *buf, size_t size)
{
    render_text(raw, strlen(raw), buf, size);
    return buf;
}

static int fail(struct attach_result *res, enum attach_outcome o, int code)
{
    res->outcome = o;
    if (res->error.code == 0)
        res->error.code = code;
    return code < 0 ? code : -EPROTO;
}

/* Is a profiler already set up through the target's environment? The runtime would then answer
 * "already active"; naming the variable tells people why. */
static void note_profiler_env(const struct target *t, struct attach_result *res)
{
    static const char *const prefixes[] = {"CORECLR_", "DOTNET_", "COMPlus_"};
    for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
        char name[64];
        const char *v;
        size_t vlen;
        snprintf(name, sizeof(name), "%sENABLE_PROFILING", prefixes[i]);
        if (target_getenv(t, name, &v, &vlen) && vlen == 1 && v[0] == '1') {
            snprintf(res->profiler_env, sizeof(res->profiler_env), "%s=1", name);
            return;
        }
    }
}

/* Is the runtime configured to pause at startup until a ResumeRuntime?
 * DefaultDiagnosticPortSuspend=1, or a DiagnosticPorts entry, whose default mode is suspend unless
 * it says ",nosuspend". */
static bool suspend_configured(const struct target *t)
{
    static const char *const prefixes[] = {"DOTNET_", "COMPlus_"};
    for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
        char name[64];
        const char *v;
        size_t vlen;
        snprintf(name, sizeof(name), "%sDefaultDiagnosticPortSuspend", prefixes[i]);
        if (target_getenv(t, name, &v, &vlen) && vlen == 1 && v[0] == '1')
            return true;
        snprintf(name, sizeof(name), "%sDiagnosticPorts", prefixes[i]);
        if (!target_getenv(t, name, &v, &vlen))
            continue;
        /* "path[,connect|listen][,suspend|nosuspend];path..." */
        const char *p = v, *end = v + vlen;
        while (p < end) {
            const char *semi = memchr(p, ';', (size_t)(end - p));
            const char *pe = semi ? semi : end;
            if (pe > p && !memmem(p, (size_t)(pe - p), ",nosuspend", 10))
                return true;
            p = semi ? semi + 1 : end;
        }
    }
    return false;
}

/* DOTNET_EnableDiagnostics=0 (or a sibling) removes the socket altogether; say so rather than
 * "not .NET". */
static const char *diagnostics_disabled_by(const struct target *t)
{
    return proc_environ_diagnostics_off(t->environ, t->environ_len);
}

/* Would the runtime's own socket path, TMPDIR + dotnet-diagnostic-<pid>-<key>-socket, fit in
 * sun_path (107 bytes and the NUL) in the target's view? */
static bool socket_path_too_long(const struct target *t)
{
    char name[96];
    int n = snprintf(name, sizeof(name), "dotnet-diagnostic-%d-%llu-socket", (int)t->status.nspid,
                     (unsigned long long)t->stat.starttime);
    return n < 0 || strlen(t->tmpdir) + (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path);
}

static int socket_error(struct target *t, const struct diag_socket *s, struct attach_result *res)
{
    struct cla_error *e = &res->error;
    const char *off = diagnostics_disabled_by(t);
    char tmpdir[256];
    shown(t->tmpdir, tmpdir, sizeof(tmpdir));
    switch (s->state) {
    case SOCKET_ABSENT:
        if (off) {
            err_set(e, -ENOENT, "pid %d has %s=0: the runtime opened no diagnostic socket",
                    (int)t->pid, off);
            err_hint(e,
                     "restart the app without %s=0 (from .NET 8, "
                     "DOTNET_EnableDiagnostics_Debugger=0 keeps the debugger off)",
                     off);
        } else if (socket_path_too_long(t)) {
            /* The runtime formats its socket path into sun_path with snprintf and binds the
             * silently truncated name (dotnet/runtime#111165): there is nothing to connect to. */
            err_set(e, -ENAMETOOLONG,
                    "pid %d: its TMPDIR '%s' is too long: the runtime's socket path would exceed "
                    "the %zu bytes of sun_path, so the runtime bound a truncated name or none",
                    (int)t->pid, tmpdir, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
            err_hint(e, "restart the app with a shorter TMPDIR (at most about 60 bytes)");
        } else {
            err_set(e, -ENOENT,
                    "pid %d (%s) has no diagnostic socket 'dotnet-diagnostic-%d-*-socket' in %s "
                    "as it sees it: not a .NET process, or its runtime has not started",
                    (int)t->pid, t->comm, (int)t->status.nspid, tmpdir);
            err_hint(e, "list .NET processes with 'clrattach ps'");
        }
        return fail(res, ATTACH_NOT_DOTNET, -ENOENT);
    case SOCKET_DIR_ERROR:
        err_set(e, -s->dir_errno, "cannot open the target's TMPDIR %s in its root: %s", tmpdir,
                strerror(s->dir_errno));
        if (s->dir_errno == ELOOP || s->dir_errno == ENOTDIR || s->dir_errno == EXDEV)
            err_hint(e,
                     "on the path to %s inside the target a link loops or leads out of its "
                     "root, or a file stands for a directory; give the app a plain TMPDIR",
                     tmpdir);
        else if (s->dir_errno == EACCES)
            /* Listed as the target's user already (creds.h): more rights would not help. */
            err_hint(e,
                     "clrattach lists it as the app's own user (uid %u), who may not read it; "
                     "give the app a TMPDIR it can read",
                     (unsigned)t->status.uid[1]);
        return fail(res,
                    s->dir_errno == ENOENT   ? ATTACH_NOT_DOTNET
                    : s->dir_errno == EACCES ? ATTACH_PERMISSION
                                             : ATTACH_PROTOCOL,
                    -s->dir_errno);
    case SOCKET_NOT_SOCKET:
        err_set(e, -ENOTSOCK, "'%s%s' in the target is not a socket", tmpdir, s->name);
        err_hint(e, "the target's diagnostic socket was replaced by another kind of file; "
                    "refusing to use it");
        return fail(res, ATTACH_PROTOCOL, -ENOTSOCK);
    default: return 0;
    }
}

/* EACCES on connect: name the socket's real owner (its inode, held O_PATH), not the target's
 * uid. A socket the target's own user cannot use was put there by someone else, for instance
 * bind-mounted over the name to make us talk to it. */
static void socket_owner_error(int sockfd, const struct target *t, const char *name, uid_t uid,
                               struct cla_error *e)
{
    struct stat st;
    if (fstat(sockfd, &st) < 0) {
        err_hint(e, "run clrattach as uid %u or as root", (unsigned)uid);
        return;
    }
    err_set(e, -EACCES, "permission denied on the socket '%s%s': it belongs to uid %u (mode 0%o)",
            t->tmpdir, name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    if (st.st_uid != uid)
        err_hint(e,
                 "the target runs as uid %u and cannot use this socket itself; clrattach "
                 "connects only as the target's user, so it refuses",
                 (unsigned)uid);
    else
        err_hint(e, "the socket's mode keeps its own user out; restart the app");
}

static void fill_runtime(struct attach_result *res, const struct ipc_process_info *pi)
{
    struct runtime_info ri;
    _Static_assert(sizeof(res->runtime_version) == sizeof(ri.version) &&
                       sizeof(res->runtime_rid) == sizeof(ri.rid) &&
                       sizeof(res->os_arch) == sizeof(ri.os) + sizeof(ri.arch),
                   "attach_result keeps the runtime's strings as runtime_info renders them");
    runtime_info_from(pi, &ri);
    res->have_runtime = true;
    memcpy(res->runtime_version, ri.version, sizeof(res->runtime_version));
    memcpy(res->runtime_rid, ri.rid, sizeof(res->runtime_rid));
    snprintf(res->os_arch, sizeof(res->os_arch), "%s-%s", ri.os, ri.arch);
}

static enum attach_outcome outcome_of_hresult(uint32_t hr)
{
    switch (hresult_lookup(hr)->cls) {
    case HRESULT_CLASS_OK: return ATTACH_OK;
    case HRESULT_CLASS_ALREADY: return ATTACH_ALREADY_ACTIVE;
    case HRESULT_CLASS_NOT_READY: return ATTACH_NOT_READY;
    case HRESULT_CLASS_PROTOCOL: return ATTACH_PROTOCOL;
    case HRESULT_CLASS_LOAD:
    default: return ATTACH_LOAD_FAILED;
    }
}

/* What a delivery put in the target's view, a single file or a profiler directory. */
struct placed {
    char path[TARGET_PATH_MAX]; /* the library the runtime dlopen()s */
    char top[TARGET_PATH_MAX];  /* what this run created: the file, or the directory */
    char dir[TARGET_PATH_MAX];  /* {dir}: the delivered directory, or the file's directory */
    char sha256[65];            /* of the file, or the directory's manifest digest */
    bool is_dir, reused;
    uint64_t dev, ino;
};

static int deliver_one(int rootfd, const struct profset_build *build, const char *dir, uid_t uid,
                       struct placed *ret, struct cla_error *e)
{
    memset(ret, 0, sizeof(*ret));
    if (build->dir) {
        struct deliver_dir_opts dopts = {.pd = build->dir, .dir = dir, .uid = uid};
        struct deliver_dir_result dr;
        int r = deliver_dir(rootfd, &dopts, &dr, e);
        if (r < 0)
            return r;
        ret->is_dir = true;
        ret->reused = dr.reused;
        ret->dev = dr.dev;
        ret->ino = dr.ino;
        memcpy(ret->path, dr.entry, sizeof(ret->path));
        memcpy(ret->top, dr.path, sizeof(ret->top));
        memcpy(ret->dir, dr.path, sizeof(ret->dir));
        memcpy(ret->sha256, build->dir->digest, sizeof(ret->sha256));
        return 0;
    }
    struct deliver_opts dopts = {
        .data = build->data, .len = build->len, .basename = build->name, .dir = dir, .uid = uid};
    struct deliver_result dr;
    int r = deliver_profiler(rootfd, &dopts, &dr, e);
    if (r < 0)
        return r;
    ret->reused = dr.reused;
    ret->dev = dr.dev;
    ret->ino = dr.ino;
    memcpy(ret->path, dr.path, sizeof(ret->path));
    memcpy(ret->top, dr.path, sizeof(ret->top));
    const char *slash = strrchr(dr.path, '/');
    snprintf(ret->dir, sizeof(ret->dir), "%.*s", (int)(slash > dr.path ? slash - dr.path : 1),
             dr.path);
    memcpy(ret->sha256, dr.sha256, sizeof(ret->sha256));
    return 0;
}

/* The target's mount table, read only to name a mount that a candidate directory is refused
 * for, at most once per attach. */
struct mounts_once {
    struct proc_mount *list; /* NULL: unreadable, or not read yet */
    size_t n;
    bool tried;
};

static void mounts_once_free(struct mounts_once *m)
{
    free(m->list);
    m->list = NULL;
}

/* Can a .so be mapped from this candidate directory? Asked of the directory itself, opened
 * through the target's root as its user (no link followed): statfs gives the flags of the
 * mount it is on as the target sees it. A directory that cannot be opened or a kernel that
 * does not say (ST_VALID) leaves the candidate to be tried. */
static void judge_candidate(const struct target *t, struct placement *p, struct mounts_once *m)
{
    _cleanup_close_ int fd = rootfs_open(t->rootfd, p->dir, ROOTFS_DIR, O_PATH, 0, NULL);
    struct statfs sf;
    if (fd < 0 || fstatfs(fd, &sf) < 0 || !(sf.f_flags & ST_VALID))
        return;
    bool noexec = sf.f_flags & ST_NOEXEC, read_only = sf.f_flags & ST_RDONLY;
    if (!noexec && !read_only)
        return;
    if (!m->tried) {
        m->tried = true;
        _cleanup_free_ char *mi = NULL;
        size_t mlen;
        if (target_read_file(t, "mountinfo", PROC_MOUNTINFO_MAX, &mi, &mlen, NULL) == 0)
            (void)proc_parse_mountinfo(mi, mlen, &m->list, &m->n, NULL);
    }
    placement_judge(p, noexec, read_only, m->list, m->list ? m->n : 0);
}

/* Tries each candidate directory in turn until one takes the profiler; the reasons for
 * passing over the others are kept for the result and for the error. */
static int deliver_somewhere(const struct attach_opts *o, struct target *t,
                             const struct profset_build *build, struct placed *ret,
                             struct attach_result *res)
{
    struct placement cand[PLACEMENT_MAX];
    size_t n = placement_candidates(t->tmpdir, o->target_dir, cand);
    _cleanup_(mounts_once_free) struct mounts_once mounts = {0};
    size_t used = 0;
    int last = -ENOENT;
    for (size_t i = 0; i < n; i++) {
        struct cla_error de = {0};
        judge_candidate(t, &cand[i], &mounts);
        if (!cand[i].rejected[0]) {
            last = deliver_one(t->rootfd, build, cand[i].dir, res->uid, ret, &de);
            if (last >= 0)
                return 0;
            if (last == -ENOMEM) {
                res->error = de;
                return fail(res, ATTACH_INTERNAL, last);
            }
            snprintf(cand[i].rejected, sizeof(cand[i].rejected), "%.159s", de.msg);
        }
        char dir[160];
        int w = snprintf(res->placement + used, sizeof(res->placement) - used, "%s%s (%s): %s",
                         used ? "; " : "", shown(cand[i].dir, dir, sizeof(dir)), cand[i].source,
                         cand[i].rejected);
        if (w > 0)
            used = (size_t)w >= sizeof(res->placement) - used ? sizeof(res->placement) - 1
                                                              : used + (size_t)w;
    }
    err_set(&res->error, last,
            "deliver: no directory in the target's view can take the "
            "profiler: %s",
            res->placement);
    if (o->target_dir)
        err_hint(&res->error,
                 "choose a --target-dir that is writable by uid %u and not mounted "
                 "noexec or read-only in the app container",
                 (unsigned)res->uid);
    else
        err_hint(&res->error, "mount a writable volume without noexec in the app container (an "
                              "emptyDir, e.g. at /clrattach) and pass --target-dir with its path");
    return fail(res, ATTACH_DELIVERY, last);
}

/* Removes what this run delivered (nothing reused), unless --keep: the runtime refused it, so
 * nothing maps it. Done before the reply stage of the seccomp filter, which forbids unlink. */
static void undo_delivery(const struct attach_opts *o, struct target *t, const struct placed *p,
                          struct attach_result *res)
{
    if (o->keep || p->reused || !p->dev)
        return;
    res->removed = deliver_undo(t->rootfd, p->top, p->dev, p->ino, NULL) == 0;
}

/* The target's /proc/<pid>/maps before the attach, read at most once per attach: by the RID
 * guess when the runtime did not name its RID, then by the dependency check. */
struct maps_once {
    char *buf; /* NULL: unreadable, or not read yet */
    size_t len;
    bool tried;
};

static const char *maps_of(const struct target *t, struct maps_once *m, size_t *ret_len)
{
    if (!m->tried) {
        m->tried = true;
        if (target_read_file(t, "maps", PROC_MAPS_MAX, &m->buf, &m->len, NULL) < 0)
            m->buf = NULL;
    }
    *ret_len = m->buf ? m->len : 0;
    return m->buf;
}

static void maps_once_free(struct maps_once *m)
{
    free(m->buf);
    m->buf = NULL;
}

/* The maps for depcheck, which asks only when the loader's directories lack a name. */
struct maps_source {
    const struct target *t;
    struct maps_once *m;
};

static const char *maps_for_depcheck(void *arg, size_t *ret_len)
{
    struct maps_source *src = arg;
    return maps_of(src->t, src->m, ret_len);
}

/* Can the target's loader find every library the profiler needs? (depcheck.h) */
static int check_dependencies(const struct attach_opts *o, struct target *t,
                              const struct profset_build *build, const struct rid *rid,
                              const struct placed *p, struct maps_once *m,
                              struct attach_result *res)
{
    if (o->skip_dependency_check)
        return 0;
    struct maps_source src = {.t = t, .m = m};
    const char *llp = NULL;
    size_t llp_len = 0;
    if (!target_getenv(t, "LD_LIBRARY_PATH", &llp, &llp_len))
        llp = NULL;
    struct depcheck_input in = {
        .rootfd = t->rootfd,
        .libc = rid->libc,
        .arch = rid->arch,
        .ld_library_path = llp,
        .ld_library_path_len = llp_len,
        .maps = maps_for_depcheck,
        .maps_arg = &src,
        .build = build,
        .delivered = p->is_dir ? p->top : p->path,
    };
    int r = depcheck_run(&in, &res->error);
    if (r == 0)
        return 0;
    undo_delivery(o, t, p, res);
    return fail(res, r == -ENOMEM ? ATTACH_INTERNAL : ATTACH_DEPENDENCY, r);
}

/* The client data with its placeholders filled in, in a block of its own size. Returns its
 * length with *ret set (NULL for none), -E2BIG past the protocol's cap or -EINVAL. */
static int expand_client_data(const struct attach_opts *o, const struct placed *p, uint8_t **ret,
                              struct cla_error *e)
{
    size_t need = 0, n = 0;
    *ret = NULL;
    int r = placeholders_expand(o->client_data, o->client_data_len, p->dir, p->path, NULL,
                                IPC_MAX_CLIENT_DATA, &need, e);
    if (r < 0 || need == 0)
        return r;
    _cleanup_free_ uint8_t *cd = malloc(need);
    if (!cd)
        return -ENOMEM;
    r = placeholders_expand(o->client_data, o->client_data_len, p->dir, p->path, cd, need, &n, e);
    if (r < 0)
        return r;
    *ret = util_take_ptr(&cd);
    return (int)n;
}

/* already_active: who holds the slot? A mapped library (other than ours) that exports
 * DllGetClassObject is a loaded CLR profiler; the environment may name one too. */
static void find_holder(struct target *t, const struct placed *p, struct attach_result *res)
{
    _cleanup_free_ char *maps = NULL;
    size_t mlen;
    if (target_read_file(t, "maps", PROC_MAPS_MAX, &maps, &mlen, NULL) < 0)
        return;
    res->mapped = proc_maps_has(maps, mlen, strrchr(p->path, '/') + 1) == 1;
    _cleanup_free_ char *libs = malloc(65536);
    if (!libs)
        return;
    size_t n = proc_maps_libraries(maps, mlen, libs, 65536, 64);
    /* Another profiler first. Our own library, just mapped by the refused attach, is the holder
     * only when it was there before us (reused) and nothing else is: this very profiler was
     * attached already. */
    for (int pass = 0; pass < 2; pass++) {
        const char *lib = libs;
        for (size_t i = 0; i < n; i++, lib += strlen(lib) + 1) {
            bool ours = strcmp(lib, p->path) == 0;
            if (pass == 0 ? ours : !ours || !p->reused)
                continue;
            /* maps shows resolved paths, so no link needs following; and after delivery the
             * filter answers openat2 with EPERM, where rootfs_open() walks with openat. */
            _cleanup_close_ int fd = rootfs_open(t->rootfd, lib, ROOTFS_REG, O_RDONLY, 0, NULL);
            if (fd < 0)
                continue;
            _cleanup_free_ char *buf = NULL;
            size_t len;
            struct elf_info ei;
            if (util_read_all(fd, ELF_READ_MAX, &buf, &len) == 0 &&
                elfinfo_parse((const uint8_t *)buf, len, &ei, NULL) == 0 &&
                ei.exports_class_factory) {
                shown(lib, res->holder, sizeof(res->holder));
                return;
            }
        }
    }
}

#define HR_NOT_YET_AVAILABLE ATTACH_HR_NOT_YET_AVAILABLE

/*
 * A runtime paused at startup (DOTNET_DefaultDiagnosticPortSuspend=1) refuses AttachProfiler;
 * it accepts StartupProfiler and then loads the profiler as a startup profiler when it resumes.
 * The runtime serves one command per connection, so each goes on its own (runtime PR #52175).
 */
static int startup_load(const struct attach_opts *o, int sockfd, const struct ipc_peer *peer,
                        const char *path, uint32_t *ret_hr, struct cla_error *e)
{
    /* On the heap, sized for this path: a 64 KiB array here made run()'s frame, where this is
     * inlined, that much larger, and each page of it touched on entry. */
    size_t room = ipc_startup_frame_room(path);
    _cleanup_free_ uint8_t *req = malloc(room);
    if (!req)
        return err_set(e, -ENOMEM, "out of memory");
    int n = ipc_encode_startup(&o->clsid, path, req, room, e);
    if (n < 0)
        return n;
    int r = ipc_conn_status_command(sockfd, peer, req, (size_t)n, util_now_ms() + o->timeout_ms,
                                    ret_hr, e);
    if (r < 0 || *ret_hr != 0)
        return r;
    n = ipc_encode_simple(IPC_SET_PROCESS, IPC_PROCESS_RESUME, req, IPC_HEADER_SIZE, e);
    if (n < 0)
        return n;
    return ipc_conn_status_command(sockfd, peer, req, (size_t)n, util_now_ms() + o->timeout_ms,
                                   ret_hr, e);
}

/*
 * The architecture of the CoreCLR library mapped in the target, read through its root (maps
 * shows resolved paths: no link to follow). When the executable is an interpreter rather than
 * the runtime host (binfmt_misc: qemu-user runs an arm64 dotnet on x64, and /proc/<pid>/exe is
 * qemu, of the host's architecture), this is the one that says which build can load. UNKNOWN
 * when no runtime library is mapped (a single-file app) or it cannot be read.
 */
static enum rid_arch runtime_library_arch(const struct target *t, const char *maps, size_t mlen)
{
    char lib[TARGET_PATH_MAX];
    if (proc_maps_runtime_library(maps, mlen, lib, sizeof(lib)) != 1)
        return RID_ARCH_UNKNOWN;
    _cleanup_close_ int fd = rootfs_open(t->rootfd, lib, ROOTFS_REG, O_RDONLY, 0, NULL);
    _cleanup_free_ char *buf = NULL;
    size_t len;
    struct elf_info ei;
    if (fd < 0 || util_read_all(fd, ELF_READ_MAX, &buf, &len) < 0 ||
        elfinfo_parse((const uint8_t *)buf, len, &ei, NULL) < 0)
        return RID_ARCH_UNKNOWN;
    return ei.arch;
}

/*
 * The target's runtime identifier decides which profiler build can load there. In order of
 * trust: --rid; the runtime's own ProcessInfo3 answer (normalised: old spellings such as
 * alpine.3.17-x64 mean linux-musl-x64); else the loader mapped in the target (ld-musl vs
 * ld-linux) and the ELF machine of the mapped libcoreclr.so, or of the executable when no
 * runtime library is mapped.
 */
static int target_rid(const struct attach_opts *o, const struct target *t, struct maps_once *m,
                      struct attach_result *res, struct rid *ret)
{
    struct cla_error *e = &res->error;
    if (o->rid) {
        if (rid_parse(o->rid, ret) < 0) {
            err_set(e, -EINVAL, "--rid '%s' is not a Linux runtime identifier", o->rid);
            err_hint(e, "use a portable RID such as linux-x64, linux-musl-x64 or linux-arm64");
            return fail(res, ATTACH_USAGE, -EINVAL);
        }
        /* The runtime's own answer knows better than the operator: a musl build sent into a
         * glibc process fails with a bare 0x8007007E. */
        struct rid own;
        if (!o->force_rid && res->runtime_rid[0] && rid_parse(res->runtime_rid, &own) == 0 &&
            own.portable[0] && strcmp(own.portable, ret->portable) != 0) {
            err_set(e, -EINVAL, "--rid %s contradicts the runtime's own answer: it runs %s (%s)",
                    ret->portable, own.portable, res->runtime_rid);
            err_hint(e, "drop --rid (the runtime's answer chooses the build), or pass "
                        "--force-rid if you know better");
            return fail(res, ATTACH_USAGE, -EINVAL);
        }
        res->rid_source = attach_rid_sources[0];
    } else if (res->runtime_rid[0] && rid_parse(res->runtime_rid, ret) == 0 && ret->portable[0]) {
        res->rid_source = attach_rid_sources[1];
    } else {
        enum rid_libc libc = RID_LIBC_UNKNOWN;
        enum rid_arch arch = RID_ARCH_UNKNOWN;
        size_t len, len_maps;
        const char *maps = maps_of(t, m, &len_maps);
        if (maps) {
            int k = proc_maps_libc(maps, len_maps);
            libc = k == 1 ? RID_LIBC_MUSL : k == 2 ? RID_LIBC_GLIBC : RID_LIBC_UNKNOWN;
        }
        _cleanup_free_ char *exe = NULL;
        struct elf_info ei;
        /* "exe" is a magic link of our own procfs to the target's executable; its bytes are
         * the target's, parsed like any other untrusted input (bounded, checked). */
        if (target_read_exe(t, ELF_READ_MAX, &exe, &len, NULL) == 0 &&
            elfinfo_parse((const uint8_t *)exe, len, &ei, NULL) == 0) {
            arch = ei.arch;
            if (libc == RID_LIBC_UNKNOWN)
                libc = ei.libc;
        }
        enum rid_arch lib_arch = maps ? runtime_library_arch(t, maps, len_maps) : RID_ARCH_UNKNOWN;
        if (lib_arch != RID_ARCH_UNKNOWN)
            arch = lib_arch;
        rid_from_parts(libc, arch, ret);
        res->rid_source = attach_rid_sources[2];
    }
    snprintf(res->target_rid, sizeof(res->target_rid), "%s", ret->portable);
    return 0;
}

/* The reply stage of the seccomp filter: after this nothing more is written into the target.
 * `r` is the attach's result so far: a failure to tighten only becomes the outcome when the
 * attach itself succeeded. */
static int tighten_replied(const struct attach_opts *o, struct attach_result *res, int r)
{
    if (!o->on_stage)
        return 0;
    struct cla_error se = {0};
    int sr = o->on_stage(ATTACH_STAGE_REPLIED, o->userdata, &se);
    if (sr < 0 && r >= 0) {
        res->error = se;
        return fail(res, ATTACH_INTERNAL, sr);
    }
    return 0;
}

/* already_active in the operator's terms: who holds the slot, and what stayed behind. */
static void already_active_hint(const struct attach_result *res, const struct hresult_info *hi,
                                struct cla_error *e)
{
    char holder[512] = "";
    if (res->holder[0] && res->profiler_env[0])
        snprintf(holder, sizeof(holder), "%s is loaded (and %s is set in its environment)",
                 res->holder, res->profiler_env);
    else if (res->holder[0])
        snprintf(holder, sizeof(holder), "%s is loaded and exports DllGetClassObject", res->holder);
    else if (res->profiler_env[0])
        snprintf(holder, sizeof(holder),
                 "%s is set in its environment: a profiler was loaded "
                 "at startup",
                 res->profiler_env);
    err_hint(e, "%s%s%s%s", holder, holder[0] ? ". " : "",
             res->mapped ? "The refused library stays mapped in the app (the runtime loaded it "
                           "before refusing and does not unload it); nothing else changed. "
                         : "",
             hi->next_step);
}

/* What the steps of one attach share. Everything here is released when run() returns, before
 * attach_run() gives our own credentials back. */
struct attempt {
    const struct attach_opts *o;
    struct attach_result *res;
    struct target *t;
    int sockfd;
    struct diag_socket s;
    struct ipc_peer peer; /* who must listen on sockfd: the pinned process */
    struct maps_once maps;
    struct rid rid;
    const struct profset_build *build;
    struct placed p;
    uint8_t *req; /* the AttachProfiler frame */
    size_t req_len;
    uint32_t hr;
    int64_t sent_at;
};

static void attempt_free(struct attempt *a)
{
    maps_once_free(&a->maps);
    free(a->req);
    if (a->sockfd >= 0)
        close(a->sockfd);
}

/* The operator's inputs and our own files, all checked before anything touches the target, and
 * read before we act as the target's user (who may not be able to read them). */
static int check_inputs(const struct attach_opts *o, struct profset *ps, struct attach_result *res)
{
    struct cla_error *e = &res->error;
    int r;
    if (o->startup && o->client_data_len) {
        err_set(e, -EINVAL,
                "--startup cannot carry --client-data: a runtime paused at startup "
                "takes the profiler with StartupProfiler, a command with no room for "
                "client data, so it would be dropped silently");
        err_hint(e, "configure the profiler through the app's environment for a startup load, "
                    "or attach without --startup once the runtime has started");
        return fail(res, ATTACH_USAGE, -EINVAL);
    }
    /* A typo in a placeholder is the operator's. */
    if (o->client_data_len) {
        size_t n;
        if ((r = placeholders_expand(o->client_data, o->client_data_len, "/", "/", NULL,
                                     IPC_MAX_CLIENT_DATA, &n, e)) == -EINVAL)
            return fail(res, ATTACH_USAGE, r);
    }
    /* Checked to be shared objects. */
    if ((r = profset_load(o->profiler_path, o->entry, ps, e)) < 0)
        return fail(res, ATTACH_USAGE, r);
    return 0;
}

/* An unreadable environ in the operator's terms: which right is missing depends on who we are. */
static int environ_error(const struct target *t, struct attach_result *res)
{
    struct cla_error *e = &res->error;
    err_set(e, -t->environ_errno, "cannot read the environment of pid %d: %s", (int)t->pid,
            strerror(t->environ_errno));
    if (geteuid() == 0)
        err_hint(e, "even root may not inspect this process: it holds capabilities "
                    "clrattach lacks, or a security module (Yama ptrace_scope, AppArmor, "
                    "SELinux) forbids it; give clrattach CAP_SYS_PTRACE in the target's user "
                    "namespace");
    else if (geteuid() == res->uid)
        /* Its own user may read a process's environ unless the process is not dumpable:
         * then the kernel wants CAP_SYS_PTRACE whatever the uid. */
        err_hint(e, "the process is not dumpable (prctl PR_SET_DUMPABLE 0, or a "
                    "setuid/file-capability program); root with CAP_SYS_PTRACE can read it");
    else
        err_hint(e, "run clrattach as the app's uid %u, or as root", (unsigned)res->uid);
    return fail(res, ATTACH_PERMISSION, -t->environ_errno);
}

/* What the pinned target is, from the /proc files target_open() read. */
static int inspect_target(struct attempt *a)
{
    struct target *t = a->t;
    struct attach_result *res = a->res;
    int r;
    res->nspid = t->status.nspid;
    res->uid = t->status.uid[1];
    res->gid = t->status.gid[1];
    res->starttime = t->stat.starttime;
    memcpy(res->command_line, t->cmdline, sizeof(res->command_line));
    shown(t->tmpdir, res->tmpdir, sizeof(res->tmpdir));
    /* The process selected is the one pinned: if it has exited, or its pid belongs to another
     * process now (start time), nothing more is read from it and nothing is sent. */
    if ((r = target_check_alive(t, &res->error)) < 0)
        return fail(res, ATTACH_NOT_FOUND, r);
    if (!t->environ)
        return environ_error(t, res);
    note_profiler_env(t, res);
    return 0;
}

/* Every access to the target's files and socket is made as its user, with its groups and only
 * its own filesystem capabilities (creds.h); its root is opened as that user too. */
static int act_as_user(struct attempt *a, struct creds_saved *cs)
{
    struct target *t = a->t;
    struct cla_error *e = &a->res->error;
    struct creds_target ct;
    int r;
    creds_target_of(t->procfd, &t->status, &ct);
    if ((r = creds_check(&ct, e)) < 0)
        return fail(a->res, ATTACH_PERMISSION, r);
    if ((r = creds_become(&ct, cs, e)) < 0)
        return fail(a->res, ATTACH_PERMISSION, r);
    if ((r = target_open_root(t, e)) < 0) {
        if (r == -EACCES || r == -EPERM)
            err_hint(e, "reading /proc/%d/root needs the app's uid or CAP_SYS_PTRACE", (int)t->pid);
        return fail(a->res, outcome_of_errno(r), r);
    }
    return 0;
}

/* Finds the target's socket and asks who answers (ProcessInfo). This also proves the socket is
 * live before anything is written into the target: a stale socket (crashed process) refuses the
 * connection. A runtime too old for ProcessInfo (-EREMOTEIO) is no reason to stop. */
static int ask_runtime(struct attempt *a)
{
    struct target *t = a->t;
    struct attach_result *res = a->res;
    struct cla_error *e = &res->error;
    int r;
    if ((r = diag_socket_find(t, NULL, &a->s, e)) < 0)
        return fail(res, outcome_of_errno(r), r);
    if ((r = socket_error(t, &a->s, res)) < 0)
        return r;
    shown(a->s.name, res->socket_name, sizeof(res->socket_name));
    a->sockfd = diag_socket_open(t, &a->s, e);
    if (a->sockfd < 0)
        return fail(res, outcome_of_errno(a->sockfd), a->sockfd);

    a->peer = (struct ipc_peer){.pid = t->pid, .uid = res->uid};
    struct ipc_process_info pi = {0};
    r = ipc_conn_process_info(a->sockfd, &a->peer, util_now_ms() + a->o->timeout_ms, &pi, &a->hr,
                              e);
    if (r == -ECONNREFUSED) {
        char tmpdir[256];
        err_set(e, r, "the socket '%s%s' is stale: nothing listens on it",
                shown(t->tmpdir, tmpdir, sizeof(tmpdir)), a->s.name);
        err_hint(e, "the process that created it is gone; check the pid with 'clrattach ps'");
        return fail(res, ATTACH_PROTOCOL, r);
    }
    if (r == -EACCES) {
        socket_owner_error(a->sockfd, t, a->s.name, res->uid, e);
        return fail(res, ATTACH_PERMISSION, r);
    }
    if (r < 0 && r != -EREMOTEIO)
        return fail(res, ATTACH_PROTOCOL, r);
    if (r == 0) {
        fill_runtime(res, &pi);
        ipc_process_info_free(&pi);
    }
    err_clear(e);
    return 0;
}

/* The build for the target's runtime identifier, placed in the first directory of its view that
 * takes it. */
static int choose_and_deliver(struct attempt *a, const struct profset *ps)
{
    struct attach_result *res = a->res;
    int r;
    if ((r = target_rid(a->o, a->t, &a->maps, res, &a->rid)) < 0)
        return r;
    if ((r = profset_choose(ps, &a->rid, &a->build, &res->error)) < 0)
        return fail(res, ATTACH_USAGE, r);
    memcpy(res->variant, a->build->variant, sizeof(res->variant));

    if ((r = deliver_somewhere(a->o, a->t, a->build, &a->p, res)) < 0)
        return r;
    shown(a->p.path, res->delivered_path, sizeof(res->delivered_path));
    if (a->p.is_dir)
        shown(a->p.top, res->delivered_dir, sizeof(res->delivered_dir));
    memcpy(res->sha256, a->p.sha256, sizeof(res->sha256));
    res->reused = a->p.reused;
    return 0;
}

/* The AttachProfiler frame, encoded while unlink is still allowed: a frame that cannot be built
 * undoes the delivery. */
static int encode_request(struct attempt *a)
{
    struct attach_result *res = a->res;
    struct cla_error *e = &res->error;
    _cleanup_free_ uint8_t *cd = NULL;
    int n = expand_client_data(a->o, &a->p, &cd, e);
    if (n >= 0) {
        size_t cd_len = (size_t)n, room = ipc_attach_frame_room(a->p.path, cd_len);
        a->req = malloc(room);
        n = a->req ? ipc_encode_attach(a->o->attach_timeout_ms, &a->o->clsid, a->p.path, cd, cd_len,
                                       a->req, room, e)
                   : -ENOMEM;
    }
    if (n < 0) {
        undo_delivery(a->o, a->t, &a->p, res);
        if (n == -ENOMEM)
            return fail(res, ATTACH_INTERNAL, err_set(e, n, "out of memory"));
        err_hint(e, "client data and the profiler's path share one frame of %d bytes",
                 IPC_MAX_MESSAGE);
        return fail(res, ATTACH_USAGE, n);
    }
    a->req_len = (size_t)n;
    return 0;
}

/* Sends AttachProfiler (StartupProfiler and ResumeRuntime for a runtime paused at startup).
 * Returns 0 with a->hr, the runtime's answer. */
static int send_request(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    struct attach_result *res = a->res;
    struct cla_error *e = &res->error;
    int r;
    if (o->on_stage && (r = o->on_stage(ATTACH_STAGE_DELIVERED, o->userdata, e)) < 0)
        return fail(res, ATTACH_INTERNAL, r);
    /* The pid must still be the process we inspected: never attach to its successor. */
    if ((r = target_check_alive(a->t, e)) < 0)
        return fail(res, ATTACH_NOT_FOUND, r);
    a->sent_at = util_now_ms();
    r = ipc_conn_status_command(a->sockfd, &a->peer, a->req, a->req_len, a->sent_at + o->timeout_ms,
                                &a->hr, e);
    if (r == 0 && a->hr == HR_NOT_YET_AVAILABLE && o->startup) {
        r = startup_load(o, a->sockfd, &a->peer, a->p.path, &a->hr, e);
        res->startup_load = true;
    }
    /* A connection that ends without an answer: the app may have died under the profiler (a
     * crash in InitializeForAttach, or a thread it started). Looked at briefly before it is
     * called a protocol error. */
    int64_t wait = o->settle_ms < 1000 ? o->settle_ms : 1000, unused;
    if (r < 0 && r != -ETIMEDOUT && r != -EACCES &&
        (target_check_alive(a->t, NULL) < 0 || target_settle(a->t, wait, &unused) == 1)) {
        res->died = true;
        res->died_after_ms = util_now_ms() - a->sent_at;
        err_set(e, -ESRCH,
                "the app died during the attach, before the runtime answered (within %lld ms of "
                "the request): the profiler (or what it started) killed it",
                (long long)res->died_after_ms);
        err_hint(e, "do not attach this profiler to this app again as it is; read the app's "
                    "logs and the profiler's own log for the cause");
        undo_delivery(o, a->t, &a->p, res);
        tighten_replied(o, res, r);
        return fail(res, ATTACH_TARGET_DIED, -ESRCH);
    }
    if (r < 0) {
        if (r == -ETIMEDOUT)
            err_hint(e,
                     "the runtime did not answer within %lld ms; the profiler's "
                     "InitializeForAttach may still be running (raise --timeout)",
                     (long long)o->timeout_ms);
        tighten_replied(o, res, r);
        return fail(res, r == -EACCES ? ATTACH_PERMISSION : ATTACH_PROTOCOL, r);
    }
    return 0;
}

/* An answer other than success, or an app that died after answering, in the operator's terms. */
static int explain_answer(const struct attempt *a)
{
    struct attach_result *res = a->res;
    struct cla_error *e = &res->error;
    uint32_t hr = a->hr;
    const struct hresult_info *hi = hresult_lookup(hr);
    if (res->died) {
        err_set(e, -ESRCH,
                "the runtime answered %s (0x%08X), then the app died %lld ms later: the "
                "profiler (or what it left running) killed it",
                hi->name, hr, (long long)res->died_after_ms);
        err_hint(e, "do not attach this profiler to this app again as it is; read the app's "
                    "logs and the profiler's own log for the cause");
        res->outcome = ATTACH_TARGET_DIED;
        return -ESRCH;
    }
    err_set(e, -EREMOTEIO, "the runtime answered %s (0x%08X): %s", hi->name, hr, hi->cause);
    if (hr == HR_NOT_YET_AVAILABLE && !a->o->startup && suspend_configured(a->t))
        err_hint(e, "the runtime is suspended at startup (DOTNET_DefaultDiagnosticPortSuspend"
                    "=1 or a suspending DiagnosticPorts entry); run again with --startup to "
                    "load the profiler as a startup profiler and resume the runtime");
    else if (hr == HR_NOT_YET_AVAILABLE && !a->o->startup)
        err_hint(e, "the runtime is still starting (its socket is up before the runtime "
                    "can take a profiler, and no suspend is configured); attach again in a "
                    "moment");
    else if (hr == 0x8013136Au)
        already_active_hint(res, hi, e);
    else
        err_hint(e, "%s", hi->next_step);
    return -EREMOTEIO;
}

/* The answer decoded, then checked from outside: the evidence (maps, holder) is gathered and a
 * refused delivery removed before the reply stage forbids reading and unlinking in the target. */
static int settle_answer(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    struct attach_result *res = a->res;
    struct target *t = a->t;
    int r;
    res->have_hresult = true;
    res->hresult = a->hr;
    res->outcome = outcome_of_hresult(a->hr);
    /* The answer is not the whole truth: a profiler that failed can leave threads behind that
     * kill the app moments later. Watch the pinned process for the settle time. */
    if (o->settle_ms > 0 && target_settle(t, o->settle_ms, &res->died_after_ms) == 1)
        res->died = true;
    if (res->outcome == ATTACH_OK && !res->died) {
        /* Evidence from outside that the runtime really mapped our file (for --startup, after
         * ResumeRuntime and the settle time: the load happens as the runtime resumes). */
        res->mapped = target_maps_has(t, strrchr(a->p.path, '/') + 1) == 1;
    }
    if (res->outcome == ATTACH_ALREADY_ACTIVE && !res->died)
        find_holder(t, &a->p, res);
    if (res->outcome == ATTACH_LOAD_FAILED || res->died)
        undo_delivery(o, t, &a->p, res);
    if ((r = tighten_replied(o, res, 0)) < 0)
        return r;
    if (res->died || res->outcome != ATTACH_OK)
        return explain_answer(a);
    return 0;
}

/*
 * The attach, step by step. The order is the safety argument: the operator's inputs before the
 * target is touched; the target read while we are still ourselves, its files and socket only
 * as its user; ProcessInfo before anything is written (a stale socket stops us there); the
 * dependency check before the runtime is asked to dlopen(); the pid re-checked just before the
 * request goes out.
 */
static int run(const struct attach_opts *o, struct attach_result *res, struct target *t,
               struct creds_saved *cs, struct profset *ps)
{
    _cleanup_(attempt_free) struct attempt a = {.o = o, .res = res, .t = t, .sockfd = -1};
    int r;
    if ((r = check_inputs(o, ps, res)) < 0)
        return r;
    if ((r = inspect_target(&a)) < 0)
        return r;
    if ((r = act_as_user(&a, cs)) < 0)
        return r;
    if ((r = ask_runtime(&a)) < 0)
        return r;
    if ((r = choose_and_deliver(&a, ps)) < 0)
        return r;
    r = check_dependencies(o, t, a.build, &a.rid, &a.p, &a.maps, res);
    maps_once_free(&a.maps); /* its last reader */
    if (r < 0)
        return r;
    if ((r = encode_request(&a)) < 0)
        return r;
    if ((r = send_request(&a)) < 0)
        return r;
    return settle_answer(&a);
}

int attach_pin(const struct attach_opts *o, pid_t pid, struct target *ret_target,
               struct attach_result *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->pid = pid;
    int64_t start = util_now_ms();
    if (pid <= 0) {
        err_set(&ret->error, -EINVAL, "pid %d is not a process id", (int)pid);
        return fail(ret, ATTACH_USAGE, -EINVAL);
    }
    /* A TMPDIR clrattach refuses ends here as the target's fault (-EPROTO), before anything is
     * written into the target. */
    int r = target_open(o->proc_dirfd, pid, ret_target, &ret->error);
    if (r < 0) {
        fail(ret, outcome_of_errno(r), r);
        ret->duration_ms = util_now_ms() - start;
    }
    return r;
}

int attach_run(const struct attach_opts *o, struct target *t, struct attach_result *ret)
{
    struct attach_result *res = ret;
    memset(res, 0, sizeof(*res));
    res->pid = t->pid;
    struct creds_saved cs = {0};
    int64_t start = util_now_ms();

    struct profset ps = {0};
    int r = run(o, res, t, &cs, &ps);
    profset_free(&ps);

    creds_restore(&cs);
    res->duration_ms = util_now_ms() - start;
    if (r >= 0)
        err_clear(&res->error);
    return r;
}
