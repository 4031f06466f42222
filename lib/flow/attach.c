/* SPDX-License-Identifier: Apache-2.0 */
#include "flow/attach.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/render.h"
#include "base/util.h"
#include "deliver/deliver.h"
#include "deliver/place.h"
#include "deliver/placeholders.h"
#include "flow/attach_explain.h"
#include "flow/attach_internal.h"
#include "flow/startup.h"
#include "profset/depcheck.h"
#include "profset/elffile.h"
#include "profset/profset.h"
#include "profset/target_rid.h"
#include "profset/vendors.h"
#include "runtime/hresult.h"
#include "runtime/ipc_conn.h"
#include "runtime/runtime_info.h"
#include "target/creds.h"
#include "target/diag_socket.h"
#include "target/proc_maps.h"
#include "target/proc_parse.h"
#include "target/rootfs.h"
#include "target/target.h"

/* Indexed by enum attach_outcome, so every value up to ATTACH_OUTCOME_LAST needs its row (a
 * missing one would be a NULL name), and watch checks the outcomes its children send against
 * that range: a new outcome goes at the end of the enum, and here. The names and exit codes are
 * an interface (JSON, Events, docs/exit-codes.md). */
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
    [ATTACH_INERT] = {"inert_on_attach", 14},
    [ATTACH_STARTUP_LOADED] = {"loaded_at_startup", 0},
    /* The runtime could not load what it was given, as with load_failed: the same code. */
    [ATTACH_STARTUP_FAILED] = {"startup_load_failed", 7},
    [ATTACH_PERFMAP_ENABLED] = {"perfmap_enabled", 0},
    [ATTACH_PERFMAP_DISABLED] = {"perfmap_disabled", 0},
    [ATTACH_HOOK_APPLIED] = {"startup_hook_applied", 0},
    [ATTACH_RUNTIME_TOO_OLD] = {"runtime_too_old", 15},
};
_Static_assert(ARRAY_SIZE(outcomes) == ATTACH_OUTCOME_LAST + 1, "a row for every outcome");

/* Indexed by where the RID came from: watch's children send that index over their pipe
 * (enum target_rid_source), so the order is part of its wire format. */
const char *const attach_rid_sources[ATTACH_RID_SOURCES] = {
    [TARGET_RID_OPTION] = "--rid",
    [TARGET_RID_RUNTIME] = "runtime",
    [TARGET_RID_MAPS_EXE] = "maps+exe",
};
_Static_assert(TARGET_RID_MAPS_EXE + 1 == ATTACH_RID_SOURCES, "a name for every RID source");

const char *attach_outcome_name(enum attach_outcome o)
{
    return (unsigned)o < ARRAY_SIZE(outcomes) ? outcomes[o].name : "internal_error";
}

bool attach_outcome_loaded(enum attach_outcome o)
{
    return o == ATTACH_OK || o == ATTACH_STARTUP_LOADED;
}

bool attach_outcome_ok(enum attach_outcome o)
{
    return attach_outcome_loaded(o) || o == ATTACH_PERFMAP_ENABLED ||
           o == ATTACH_PERFMAP_DISABLED || o == ATTACH_HOOK_APPLIED;
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

int attach_fail(struct attach_result *res, enum attach_outcome o, int code)
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

enum attach_outcome attach_outcome_of_hresult(uint32_t hr)
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

void attach_undo_delivery(struct attempt *a)
{
    if (!a->o->keep)
        a->res->removed = place_undo(a->t, &a->p);
}

/* The maps for depcheck, which asks only when the loader's directories lack a name: the
 * snapshot the RID guess may have read already (target_maps). */
static const char *maps_for_depcheck(void *t, size_t *ret_len)
{
    return target_maps(t, ret_len);
}

/* Can the target's loader find every library the profiler needs? (depcheck.h) */
static int check_dependencies(struct attempt *a)
{
    const struct attach_opts *o = a->o;
    struct target *t = a->t;
    const struct placed *p = &a->p;
    struct attach_result *res = a->res;
    if (o->skip_dependency_check)
        return 0;
    const char *llp = NULL;
    size_t llp_len = 0;
    if (!target_getenv(t, "LD_LIBRARY_PATH", &llp, &llp_len))
        llp = NULL;
    struct depcheck_input in = {
        .rootfd = t->rootfd,
        .libc = a->rid.libc,
        .arch = a->rid.arch,
        .ld_library_path = llp,
        .ld_library_path_len = llp_len,
        .maps = maps_for_depcheck,
        .maps_arg = t,
        .procfd = t->procfd,
        .build = a->build,
        .delivered = p->is_dir ? p->top : p->path,
    };
    int r = depcheck_run(&in, res->dependency_note, sizeof(res->dependency_note), &res->error);
    if (r >= 0)
        return 0;
    attach_undo_delivery(a);
    return attach_fail(res, r == -ENOMEM ? ATTACH_INTERNAL : ATTACH_DEPENDENCY, r);
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

/* The holder search's running totals against its caps (bounds.h). */
struct holder_search {
    int64_t deadline_ms;
    uint64_t bytes;
    bool unread; /* a library given up on: past its own caps, or changed while read */
};

/* Does the mapped library `lib` export DllGetClassObject (*ret_yes; no when it is gone, not ours
 * to open or not ELF)? Returns ATTACH_HOLDER_SEARCHED to go on, or the bound that stops the
 * search. Only the chunks of the file its headers need are read (elffile.h): the target chooses
 * every library's size. */
static enum attach_holder_gap exports_entry(const struct target *t, const char *lib,
                                            struct holder_search *hs, bool *ret_yes)
{
    *ret_yes = false;
    if (util_now_ms() >= hs->deadline_ms)
        return ATTACH_HOLDER_DEADLINE;
    if (hs->bytes >= HOLDER_BYTES_MAX)
        return ATTACH_HOLDER_BYTES_CAP;
    /* maps shows resolved paths, so no link needs following; and after delivery the filter
     * answers openat2 with EPERM, where rootfs_open() walks with openat. */
    _cleanup_close_ int fd = rootfs_open(t->rootfd, lib, ROOTFS_REG, O_RDONLY, 0, NULL);
    if (fd < 0)
        return ATTACH_HOLDER_SEARCHED;
    uint64_t room = HOLDER_BYTES_MAX - hs->bytes;
    struct elffile_limits lim = {
        .max_bytes = room < HOLDER_FILE_BYTES_MAX ? room : HOLDER_FILE_BYTES_MAX,
        .deadline_ms = hs->deadline_ms,
    };
    struct elffile_stats st;
    struct elf_info ei;
    int r = elffile_parse(fd, &lim, &ei, &st, NULL);
    hs->bytes += st.bytes_read;
    if (r == -ETIMEDOUT)
        return ATTACH_HOLDER_DEADLINE;
    /* Out of room for one more page in all, rather than this library past its own caps. */
    if (r == -E2BIG && HOLDER_BYTES_MAX - hs->bytes < (1u << ELFFILE_CHUNK_SHIFT))
        return ATTACH_HOLDER_BYTES_CAP;
    if (r == -E2BIG || r == -EIO)
        hs->unread = true;
    *ret_yes = r == 0 && ei.exports_class_factory;
    return ATTACH_HOLDER_SEARCHED;
}

/* already_active: who holds the slot? A mapped library (other than ours) that exports
 * DllGetClassObject is a loaded CLR profiler; the environment may name one too. The search is
 * bounded in libraries, bytes and time (the attach's --timeout from its start): when a bound
 * stops it before a holder is found, res->holder_gap says the holder was not determined, and
 * why, rather than letting "none named" pass for "none loaded". */
static void find_holder(const struct attach_opts *o, struct target *t, const struct placed *p,
                        struct attach_result *res)
{
    struct holder_search hs = {.deadline_ms = util_now_ms() + o->timeout_ms};
    _cleanup_free_ char *maps = NULL;
    size_t mlen;
    if (target_read_file(t, "maps", PROC_MAPS_MAX, &maps, &mlen, NULL) < 0) {
        res->holder_gap = ATTACH_HOLDER_NO_MAPS;
        return;
    }
    res->mapped = proc_maps_has(maps, mlen, strrchr(p->path, '/') + 1) == 1;
    /* Room for one path more than the cap, each as long as a path gets: only the count can
     * stop the listing, so one more than the cap shows that some were left out. */
    size_t size = (HOLDER_LIBS_MAX + 1) * (TARGET_PATH_MAX + 1);
    _cleanup_free_ char *libs = malloc(size);
    if (!libs)
        return;
    size_t n = proc_maps_libraries(maps, mlen, libs, size, HOLDER_LIBS_MAX + 1);
    enum attach_holder_gap gap =
        n > HOLDER_LIBS_MAX ? ATTACH_HOLDER_LIBS_CAP : ATTACH_HOLDER_SEARCHED;
    if (n > HOLDER_LIBS_MAX)
        n = HOLDER_LIBS_MAX;
    /* Another profiler first. Our own library, just mapped by the refused attach, is the holder
     * only when it was there before us (reused) and nothing else is: this very profiler was
     * attached already. */
    for (int pass = 0; pass < 2; pass++) {
        const char *lib = libs;
        for (size_t i = 0; i < n; i++, lib += strlen(lib) + 1) {
            bool ours = strcmp(lib, p->path) == 0;
            if (pass == 0 ? ours : !ours || !p->reused)
                continue;
            bool yes;
            enum attach_holder_gap stop = exports_entry(t, lib, &hs, &yes);
            if (yes) {
                shown(lib, res->holder, sizeof(res->holder));
                return;
            }
            if (stop != ATTACH_HOLDER_SEARCHED) {
                res->holder_gap = stop;
                return;
            }
        }
    }
    res->holder_gap = gap != ATTACH_HOLDER_SEARCHED ? gap
                      : hs.unread                   ? ATTACH_HOLDER_UNREAD
                                                    : ATTACH_HOLDER_SEARCHED;
}

#define HR_NOT_YET_AVAILABLE ATTACH_HR_NOT_YET_AVAILABLE

/* The reply stage of the seccomp filter: after this nothing more is written into the target, and
 * no new connection to it is made, so an owed ResumeRuntime goes out first. `r` is the attach's
 * result so far: a failure to tighten only becomes the outcome when the attach itself
 * succeeded. */
int attach_tighten_replied(struct attempt *a, int r)
{
    const struct attach_opts *o = a->o;
    startup_resume(a);
    if (!o->on_stage)
        return 0;
    struct cla_error se = {0};
    int sr = o->on_stage(ATTACH_STAGE_REPLIED, o->userdata, &se);
    if (sr < 0 && r >= 0) {
        a->res->error = se;
        return attach_fail(a->res, ATTACH_INTERNAL, sr);
    }
    return 0;
}

/* The file name the runtime will be given for a build's entry library. */
static const char *entry_name(const struct profset_build *b)
{
    if (!b->dir)
        return b->name;
    const char *path = b->dir->files[b->dir->entry].path, *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The refusal of a profiler known to stay inert on attach (profset/vendors.h), `why` saying how
 * the app was found running. */
static int refuse_inert(struct attach_result *res, const struct vendor_noop *v, const char *why)
{
    err_set(&res->error, -EOPNOTSUPP,
            "%s (%s %s) does nothing when attached to a running app%s: %s (%s); nothing was sent",
            v->vendor, v->entry, v->clsid, why, v->on_attach, v->source);
    err_hint(&res->error,
             "load it at startup: start the app with DOTNET_DefaultDiagnosticPortSuspend=1 and run "
             "attach --startup (or watch --startup), or set the vendor's variables in the app's "
             "environment (%s); --force sends it anyway",
             v->startup);
    return attach_fail(res, ATTACH_INERT, -EOPNOTSUPP);
}

/* A profiler whose InitializeForAttach is known to do nothing would be reported as attached and
 * never run: refused before the target is touched, unless --force, which the result then marks
 * (expected_inert). Every build of a set is looked at: they share the vendor's name. *ret is the
 * vendor's row, NULL for a profiler not in the table. */
static int check_inert(const struct attach_opts *o, const struct profset *ps,
                       struct attach_result *res, const struct vendor_noop **ret)
{
    char clsid[39];
    ipc_guid_format(&o->clsid, clsid);
    const struct vendor_noop *v = NULL;
    for (size_t i = 0; i < ps->n && !v; i++)
        v = vendors_find_noop(vendors_noop, vendors_noop_count, entry_name(&ps->builds[i]), clsid);
    *ret = v;
    if (!v)
        return 0;
    /* --startup on a runtime paused at startup loads it through Initialize, which works; on one
     * already running it attaches as any other and stays inert: send_request() tells. */
    if (o->force || o->startup) {
        res->expected_inert = true;
        return 0;
    }
    return refuse_inert(res, v, "");
}

/* The operator's inputs and our own files, all checked before anything touches the target, and
 * read before we act as the target's user (who may not be able to read them). */
static int check_inputs(const struct attach_opts *o, struct profset *ps, struct attach_result *res,
                        const struct vendor_noop **ret_inert)
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
        return attach_fail(res, ATTACH_USAGE, -EINVAL);
    }
    /* Variables set in a running app come after its profiler read its environment, if it ever
     * looks: only with --force (attach_cli checks this too, for the message). */
    if (o->env_count && !o->startup && !o->force) {
        err_set(e, -EINVAL,
                "--env without --startup would set variables in a running app, "
                "whose profiler read its environment as it started, if at all");
        err_hint(e, "load the profiler at startup (--startup on a runtime started with "
                    "DOTNET_DefaultDiagnosticPortSuspend=1), or --force to set them anyway");
        return attach_fail(res, ATTACH_USAGE, -EINVAL);
    }
    if (o->env_count > ENV_VARS_MAX) {
        err_set(e, -E2BIG, "%zu --env variables exceed the cap of %d", o->env_count, ENV_VARS_MAX);
        return attach_fail(res, ATTACH_USAGE, -E2BIG);
    }
    for (size_t i = 0; i < o->env_count; i++) {
        size_t nl, n;
        const char *v = o->env[i];
        if ((r = ipc_env_check(v, &nl, e)) < 0 ||
            (r = placeholders_expand((const uint8_t *)v + nl + 1, strlen(v + nl + 1), "/", "/",
                                     NULL, ENV_VAR_BYTES_MAX, &n, e)) == -EINVAL)
            return attach_fail(res, ATTACH_USAGE, r);
    }
    /* A typo in a placeholder is the operator's. */
    if (o->client_data_len) {
        size_t n;
        if ((r = placeholders_expand(o->client_data, o->client_data_len, "/", "/", NULL,
                                     IPC_MAX_CLIENT_DATA, &n, e)) == -EINVAL)
            return attach_fail(res, ATTACH_USAGE, r);
    }
    /* Checked to be shared objects. */
    if ((r = profset_load(o->profiler_path, o->entry, ps, e)) < 0)
        return attach_fail(res, ATTACH_USAGE, r);
    return check_inert(o, ps, res, ret_inert);
}

/* What the pinned target is, from the /proc files target_open() read. */
static int inspect_target(struct target *t, struct attach_result *res)
{
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
        return attach_fail(res, ATTACH_NOT_FOUND, r);
    if (!t->environ) {
        attach_explain_environ(t, &res->error);
        return attach_fail(res, ATTACH_PERMISSION, -t->environ_errno);
    }
    note_profiler_env(t, res);
    return 0;
}

/* Every access to the target's files and socket is made as its user, with its groups and only
 * its own filesystem capabilities (creds.h); its root is opened as that user too. */
static int act_as_user(struct target *t, struct creds_saved *cs, struct attach_result *res)
{
    struct cla_error *e = &res->error;
    struct creds_target ct;
    int r;
    creds_target_of(t->procfd, &t->status, &ct);
    if ((r = creds_check(&ct, e)) < 0)
        return attach_fail(res, ATTACH_PERMISSION, r);
    if ((r = creds_become(&ct, cs, e)) < 0)
        return attach_fail(res, ATTACH_PERMISSION, r);
    if ((r = target_open_root(t, e)) < 0) {
        if (r == -EACCES || r == -EPERM)
            err_hint(e, "reading /proc/%d/root needs the app's uid or CAP_SYS_PTRACE", (int)t->pid);
        return attach_fail(res, outcome_of_errno(r), r);
    }
    return 0;
}

/* Finds the target's socket and asks who answers (ProcessInfo). This also proves the socket is
 * live before anything is written into the target: a stale socket (crashed process) refuses the
 * connection. A runtime too old for ProcessInfo (-EREMOTEIO) is no reason to stop. */
static int connect_runtime(struct target *t, int64_t timeout_ms, struct attach_conn *c,
                           struct attach_result *res)
{
    struct cla_error *e = &res->error;
    enum attach_outcome o;
    uint32_t hr;
    int r;
    if ((r = diag_socket_find(t, NULL, &c->s, e)) < 0)
        return attach_fail(res, outcome_of_errno(r), r);
    if ((r = attach_explain_socket(t, &c->s, &o, e)) < 0)
        return attach_fail(res, o, r);
    shown(c->s.name, res->socket_name, sizeof(res->socket_name));
    c->sockfd = diag_socket_open(t, &c->s, e);
    if (c->sockfd < 0)
        return attach_fail(res, outcome_of_errno(c->sockfd), c->sockfd);

    c->peer = (struct ipc_peer){.pid = t->pid, .uid = res->uid};
    struct ipc_process_info pi = {0};
    r = ipc_conn_process_info(c->sockfd, &c->peer, util_now_ms() + timeout_ms, &pi, &hr, e);
    if (r == -ECONNREFUSED) {
        attach_explain_stale(t, c->s.name, e);
        return attach_fail(res, ATTACH_PROTOCOL, r);
    }
    if (r == -EACCES) {
        attach_explain_socket_owner(c->sockfd, t, c->s.name, e);
        return attach_fail(res, ATTACH_PERMISSION, r);
    }
    if (r < 0 && r != -EREMOTEIO)
        return attach_fail(res, ATTACH_PROTOCOL, r);
    if (r == 0) {
        fill_runtime(res, &pi);
        ipc_process_info_free(&pi);
    }
    err_clear(e);
    return 0;
}

int attach_reach(struct target *t, int64_t timeout_ms, struct creds_saved *cs,
                 struct attach_conn *c, struct attach_result *res)
{
    int r;
    if ((r = inspect_target(t, res)) < 0)
        return r;
    if ((r = act_as_user(t, cs, res)) < 0)
        return r;
    return connect_runtime(t, timeout_ms, c, res);
}

int attach_runtime_major(const struct attach_result *res)
{
    if (!res->have_runtime || !res->runtime_version[0])
        return -1;
    char *end;
    long major = strtol(res->runtime_version, &end, 10);
    return end != res->runtime_version && *end == '.' && major > 0 && major < 1000 ? (int)major
                                                                                   : -1;
}

int attach_require_runtime(struct attach_result *res, int min_major, const char *command,
                           const char *hint)
{
    int major = attach_runtime_major(res);
    if (major >= min_major)
        return 0;
    char ver[96];
    snprintf(ver, sizeof(ver), major > 0 ? ".NET %s" : "a runtime older than .NET 7",
             res->runtime_version);
    err_set(&res->error, -EOPNOTSUPP, "%s needs .NET %d or later; pid %d runs %s: nothing was sent",
            command, min_major, (int)res->pid, ver);
    err_hint(&res->error, "%s", hint);
    return attach_fail(res, ATTACH_RUNTIME_TOO_OLD, -EOPNOTSUPP);
}

/* After the runtime was reached: a runtime that may be paused is owed its resume, and --env
 * for one that runs is refused before anything is delivered. */
static int ask_runtime(struct attempt *a)
{
    struct target *t = a->t;
    struct attach_result *res = a->res;
    struct cla_error *e = &res->error;
    /* --startup on a runtime whose environment asks it to pause at startup: it may be waiting
     * for us now, and is resumed on every way out from here. */
    if (a->o->startup && attach_explain_suspend_configured(t)) {
        startup_owe_resume(a);
    } else if (a->o->startup_or_attach && a->inert && !a->o->force) {
        /* watch --startup: an app whose environment does not pause it runs; the variables are
         * for a paused one only (and are not sent here). */
        return refuse_inert(res, a->inert, " (its environment does not pause it at startup)");
    } else if (a->o->env_count && !a->o->force && !a->o->startup_or_attach) {
        err_set(e, -EALREADY,
                "--env: pid %d's environment does not ask its runtime to pause at startup "
                "(DOTNET_DefaultDiagnosticPortSuspend=1): it runs, and its profiler would never "
                "read variables set now; nothing was sent",
                (int)t->pid);
        err_hint(e, "restart the app with DOTNET_DefaultDiagnosticPortSuspend=1 and attach "
                    "--startup --env, or --force to set them in the running app anyway");
        return attach_fail(res, ATTACH_NOT_READY, -EALREADY);
    }
    return 0;
}

/* Has a signal asked the attach to stop (attach_stop)? */
static bool stop_asked(const struct attempt *a)
{
    return a->o->stop && a->o->stop->signal;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}

/* Before AttachProfiler goes out, a stop takes back what this run put in the target: the
 * profiler it delivered (not one it reused) and any temporary named with its nonce, left by a
 * delivery cut short. Then the attach ends as interrupted. Returns 0 when no stop was asked. */
static int check_stop(struct attempt *a)
{
    if (!stop_asked(a))
        return 0;
    struct attach_result *res = a->res;
    res->removed = place_undo(a->t, &a->p);
    (void)place_sweep(a->t, &a->po);
    err_set(&res->error, -EINTR, "stopped by %s before %s was sent",
            signal_name(a->o->stop->signal),
            res->resume_owed ? "StartupProfiler" : "AttachProfiler");
    err_hint(&res->error, "%s; the runtime was not asked to load the profiler%s",
             res->removed ? "what this run delivered was removed" : "nothing of this run is left",
             res->resume_owed ? ", and is resumed without it" : "");
    return attach_fail(res, ATTACH_INTERRUPTED, -EINTR);
}

/* The build for the target's runtime identifier, placed in the first directory of its view that
 * takes it. */
static int choose_and_deliver(struct attempt *a, const struct profset *ps)
{
    struct attach_result *res = a->res;
    struct target_rid_input in = {
        .option = a->o->rid, .force = a->o->force_rid, .runtime_rid = res->runtime_rid};
    enum target_rid_source source;
    int r;
    if ((r = target_rid_detect(a->t, &in, &a->rid, &source, &res->error)) < 0)
        return attach_fail(res, ATTACH_USAGE, r);
    res->rid_source = attach_rid_sources[source];
    snprintf(res->target_rid, sizeof(res->target_rid), "%s", a->rid.portable);
    if ((r = profset_choose(ps, &a->rid, &a->build, &res->error)) < 0)
        return attach_fail(res, ATTACH_USAGE, r);
    memcpy(res->variant, a->build->variant, sizeof(res->variant));

    if (a->o->nonce && !deliver_nonce_valid(a->o->nonce))
        return attach_fail(res, ATTACH_INTERNAL, err_set(&res->error, -EINVAL, "malformed nonce"));
    if (a->o->nonce)
        memcpy(a->nonce, a->o->nonce, sizeof(a->nonce));
    else if ((r = deliver_new_nonce(a->nonce)) < 0)
        return attach_fail(res, ATTACH_INTERNAL, err_setsys(&res->error, r, "getrandom"));
    a->po = (struct place_opts){
        .build = a->build, .user_dir = a->o->target_dir, .uid = res->uid, .nonce = a->nonce};
    /* From here a stop must wait until what this run writes is removed (attach_stop). */
    if (a->o->stop)
        a->o->stop->defer = 1;
    if ((r = place_profiler(a->t, &a->po, &a->p, res->placement, sizeof(res->placement),
                            &res->error)) < 0) {
        if (stop_asked(a))
            (void)place_sweep(a->t, &a->po);
        return attach_fail(res, r == -ENOMEM ? ATTACH_INTERNAL : ATTACH_DELIVERY, r);
    }
    shown(a->p.path, res->delivered_path, sizeof(res->delivered_path));
    if (a->p.is_dir)
        shown(a->p.top, res->delivered_dir, sizeof(res->delivered_dir));
    memcpy(res->sha256, a->p.sha256, sizeof(res->sha256));
    res->reused = a->p.reused;
    return check_stop(a);
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
        attach_undo_delivery(a);
        startup_resume(a);
        if (n == -ENOMEM)
            return attach_fail(res, ATTACH_INTERNAL, err_set(e, n, "out of memory"));
        err_hint(e, "client data and the profiler's path share one frame of %d bytes",
                 IPC_MAX_MESSAGE);
        return attach_fail(res, ATTACH_USAGE, n);
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
    /* The last moment a stop is honoured: the next stage forbids unlink. */
    if ((r = check_stop(a)) < 0)
        return r;
    if (o->on_stage && (r = o->on_stage(ATTACH_STAGE_DELIVERED, o->userdata, e)) < 0)
        return attach_fail(res, ATTACH_INTERNAL, r);
    /* The pid must still be the process we inspected: never attach to its successor. */
    if ((r = target_check_alive(a->t, e)) < 0)
        return attach_fail(res, ATTACH_NOT_FOUND, r);
    /* clrattach's own deadline for a runtime that may be paused: past it, nothing more is sent
     * but ResumeRuntime (run()). */
    if (res->resume_owed && util_now_ms() >= a->resume_by) {
        err_set(e, -ETIMEDOUT,
                "--resume-deadline (%lld ms) passed before StartupProfiler could be sent; the "
                "runtime is resumed without the profiler",
                (long long)o->resume_deadline_ms);
        err_hint(e, "raise --resume-deadline, or look at what made the delivery slow");
        attach_undo_delivery(a);
        return attach_fail(res, ATTACH_PROTOCOL, -ETIMEDOUT);
    }
    a->sent_at = util_now_ms();
    if (res->resume_owed && !startup_probe_first(a)) {
        r = startup_load(a);
    } else {
        /* --force: the variables go before AttachProfiler, for a profiler that reads them; a
         * watcher sends them only to a paused runtime (startup_load, below). */
        a->hr = 0;
        r = o->startup_or_attach ? 0 : startup_send_env(a);
        if (r == 0 && a->hr == 0)
            r = ipc_conn_status_command(a->c.sockfd, &a->c.peer, a->req, a->req_len,
                                        a->sent_at + o->timeout_ms, &a->hr, e);
        /* Paused although its environment did not say so (a suspend set another way). */
        if (r == 0 && a->hr == HR_NOT_YET_AVAILABLE && o->startup) {
            startup_owe_resume(a);
            r = startup_load(a);
        }
    }
    if (r == 0)
        res->answer_ms = util_now_ms() - a->sent_at;
    if (a->env_refused)
        return r;
    /* watch --startup, an inert profiler: StartupProfiler refused, as the runtime runs. */
    if (r == 0 && startup_found_running(a)) {
        attach_undo_delivery(a);
        attach_tighten_replied(a, 0);
        res->have_hresult = true;
        res->hresult = a->hr;
        res->expected_inert = false;
        return refuse_inert(res, a->inert,
                            o->env_count ? " (it runs: StartupProfiler was refused with "
                                           "E_INVALIDARG; the --env variables reached the "
                                           "running app, where nothing reads them)"
                                         : " (it runs: StartupProfiler was refused with "
                                           "E_INVALIDARG)");
    }
    /* (With watch --startup, a runtime owed the resume may have taken AttachProfiler: it ran.) */
    if (r == 0 && a->hr == 0 && a->startup_sent) {
        res->startup_load = true;
        res->expected_inert = false; /* Initialize runs, not InitializeForAttach */
        startup_resume(a);
    }
    /* A connection that ends without an answer: the app may have died under the profiler (a
     * crash in InitializeForAttach, or a thread it started). Looked at briefly before it is
     * called a protocol error. */
    int64_t wait = o->settle_ms < 1000 ? o->settle_ms : 1000, unused;
    if (r < 0 && r != -ETIMEDOUT && r != -EACCES &&
        (target_check_alive(a->t, NULL) < 0 || target_settle(a->t, wait, &unused) == 1)) {
        res->died = true;
        res->died_after_ms = util_now_ms() - a->sent_at;
        attach_explain_died(res->died_after_ms, e);
        attach_undo_delivery(a);
        attach_tighten_replied(a, r);
        return attach_fail(res, ATTACH_TARGET_DIED, -ESRCH);
    }
    if (r < 0) {
        if (r == -ETIMEDOUT && res->resume_owed)
            err_hint(e,
                     "the runtime did not answer within --timeout or --resume-deadline (%lld ms); "
                     "it was sent ResumeRuntime without waiting longer",
                     (long long)o->resume_deadline_ms);
        else if (r == -ETIMEDOUT)
            err_hint(e,
                     "the runtime did not answer within %lld ms; the profiler's "
                     "InitializeForAttach may still be running (raise --timeout)",
                     (long long)o->timeout_ms);
        attach_tighten_replied(a, r);
        return attach_fail(res, r == -EACCES ? ATTACH_PERMISSION : ATTACH_PROTOCOL, r);
    }
    return 0;
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
    if (res->startup_load && a->hr == 0)
        return startup_settle(a);
    res->outcome = attach_outcome_of_hresult(a->hr);
    /* A variable the runtime refused: the profiler was never handed over. */
    if (a->env_rejected) {
        attach_undo_delivery(a);
        if ((r = attach_tighten_replied(a, 0)) < 0)
            return r;
        err_hint(&res->error, "%s; nothing more was sent%s", hresult_lookup(a->hr)->next_step,
                 res->resume_owed ? ", and the runtime is resumed without the profiler" : "");
        return attach_fail(res, res->outcome, -EREMOTEIO);
    }
    /* The answer is not the whole truth: a profiler that failed can leave threads behind that
     * kill the app moments later. Watch the pinned process for the settle time. */
    int64_t waited_from = util_now_ms();
    if (o->settle_ms > 0 && target_settle(t, o->settle_ms, &res->died_after_ms) == 1)
        res->died = true;
    if (res->outcome == ATTACH_OK && !res->died) {
        /* Evidence from outside that the runtime really mapped our file, read after the settle
         * time: a profiler that asked to detach in the meantime (RequestProfilerDetach) has
         * been unloaded by then, if its threads have left it, and shows as not mapped. */
        res->mapped = target_maps_has(t, strrchr(a->p.path, '/') + 1) == 1;
    }
    res->settle_wait_ms = util_now_ms() - waited_from;
    if (res->outcome == ATTACH_ALREADY_ACTIVE && !res->died)
        find_holder(o, t, &a->p, res);
    /* Every refusal, not only a failed load: a runtime not ready, a profiler already active, an
     * answer the protocol did not expect. What this run delivered is not loaded as this run's
     * profiler (--keep's promise), and a later run must find no leftover of it. */
    if (res->outcome != ATTACH_OK || res->died)
        attach_undo_delivery(a);
    if ((r = attach_tighten_replied(a, 0)) < 0)
        return r;
    if (!res->died && res->outcome == ATTACH_OK)
        return 0;
    /* An answer other than success, or an app that died after answering. */
    attach_explain_answer(t, a->hr, o->startup_or_attach ? a->startup_sent : o->startup, res,
                          &res->error);
    if (!res->died)
        return -EREMOTEIO;
    res->outcome = ATTACH_TARGET_DIED;
    return -ESRCH;
}

/*
 * The attach, step by step. The order is the safety argument: the operator's inputs before the
 * target is touched; the target read while we are still ourselves, its files and socket only
 * as its user; ProcessInfo before anything is written (a stale socket stops us there); the
 * dependency check before the runtime is asked to dlopen(); the pid re-checked just before the
 * request goes out. A runtime that may be paused at startup is resumed on every way out (run()).
 */
static int run_steps(struct attempt *a, struct creds_saved *cs, struct profset *ps)
{
    const struct attach_opts *o = a->o;
    int r;
    if ((r = check_inputs(o, ps, a->res, &a->inert)) < 0)
        return r;
    if ((r = attach_reach(a->t, o->timeout_ms, cs, &a->c, a->res)) < 0)
        return r;
    if ((r = ask_runtime(a)) < 0)
        return r;
    if ((r = choose_and_deliver(a, ps)) < 0)
        return r;
    r = check_dependencies(a);
    target_maps_drop(a->t); /* its last reader */
    if (r < 0)
        return r;
    if ((r = encode_request(a)) < 0)
        return r;
    if ((r = send_request(a)) < 0)
        return r;
    return settle_answer(a);
}

static void attempt_free(struct attempt *a)
{
    target_maps_drop(a->t);
    free(a->req);
    if (a->c.sockfd >= 0)
        close(a->c.sockfd);
}

static int run(const struct attach_opts *o, struct attach_result *res, struct target *t,
               struct creds_saved *cs, struct profset *ps)
{
    _cleanup_(attempt_free) struct attempt a = {
        .o = o, .res = res, .t = t, .c.sockfd = -1, .start_ms = util_now_ms()};
    int r = run_steps(&a, cs, ps);
    /* Every way out of a run that may have left a runtime paused: ResumeRuntime (a no-op when
     * it went out already, or is not owed). */
    startup_resume(&a);
    return r;
}

int attach_pin(const struct attach_opts *o, pid_t pid, struct target *ret_target,
               struct attach_result *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->pid = pid;
    int64_t start = util_now_ms();
    if (pid <= 0) {
        err_set(&ret->error, -EINVAL, "pid %d is not a process id", (int)pid);
        return attach_fail(ret, ATTACH_USAGE, -EINVAL);
    }
    /* A TMPDIR clrattach refuses ends here as the target's fault (-EPROTO), before anything is
     * written into the target. */
    int r = target_open(o->proc_dirfd, pid, ret_target, &ret->error);
    if (r < 0) {
        attach_fail(ret, outcome_of_errno(r), r);
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
    if (o->stop)
        o->stop->defer = 0;

    creds_restore(&cs);
    res->duration_ms = util_now_ms() - start;
    if (r >= 0)
        err_clear(&res->error);
    return r;
}
