/* SPDX-License-Identifier: Apache-2.0 */
/* The words of a failed step: what the target shows and who we are, turned into a message and a
 * next step for the operator. */
#include "flow/attach_explain.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/render.h"
#include "base/util.h"
#include "runtime/hresult.h"
#include "target/creds.h"
#include "target/proc_environ.h"
#include "target/diag_socket.h"
#include "target/proc_parse.h"
#include "target/target.h"

#define HR_PROFILER_ALREADY_ACTIVE 0x8013136Au /* CORPROF_E_PROFILER_ALREADY_ACTIVE */
#define HR_E_INVALIDARG            0x80070057u

static const char died_hint[] = "do not attach this profiler to this app again as it is; read the "
                                "app's logs and the profiler's own log for the cause";

/* Would the runtime's own socket path, TMPDIR + dotnet-diagnostic-<pid>-<key>-socket, fit in
 * sun_path (107 bytes and the NUL) in the target's view? */
static bool socket_path_too_long(const struct target *t)
{
    char name[96];
    int n = snprintf(name, sizeof(name), "dotnet-diagnostic-%d-%llu-socket", (int)t->status.nspid,
                     (unsigned long long)t->stat.starttime);
    return n < 0 || strlen(t->tmpdir) + (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path);
}

int attach_explain_socket(const struct target *t, const struct diag_socket *s,
                          enum attach_outcome *ret, struct cla_error *e)
{
    /* DOTNET_EnableDiagnostics=0 (or a sibling) removes the socket altogether; say so rather
     * than "not .NET". */
    const char *off = proc_environ_diagnostics_off(t->environ, t->environ_len);
    char tmpdir[256];
    render_text(t->tmpdir, strlen(t->tmpdir), tmpdir, sizeof(tmpdir));
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
        *ret = ATTACH_NOT_DOTNET;
        return -ENOENT;
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
        *ret = s->dir_errno == ENOENT   ? ATTACH_NOT_DOTNET
               : s->dir_errno == EACCES ? ATTACH_PERMISSION
                                        : ATTACH_PROTOCOL;
        return -s->dir_errno;
    case SOCKET_NOT_SOCKET:
        err_set(e, -ENOTSOCK, "'%s%s' in the target is not a socket", tmpdir, s->name);
        err_hint(e, "the target's diagnostic socket was replaced by another kind of file; "
                    "refusing to use it");
        *ret = ATTACH_PROTOCOL;
        return -ENOTSOCK;
    default: return 0;
    }
}

void attach_explain_stale(const struct target *t, const char *name, struct cla_error *e)
{
    char tmpdir[256];
    render_text(t->tmpdir, strlen(t->tmpdir), tmpdir, sizeof(tmpdir));
    err_set(e, -ECONNREFUSED, "the socket '%s%s' is stale: nothing listens on it", tmpdir, name);
    err_hint(e, "the process that created it is gone; check the pid with 'clrattach ps'");
}

/* The socket's owner is read from its inode (held O_PATH), not assumed to be the target's uid:
 * a socket the target's own user cannot use was put there by someone else, for instance
 * bind-mounted over the name to make us talk to it. */
void attach_explain_socket_owner(int sockfd, const struct target *t, const char *name,
                                 struct cla_error *e)
{
    uid_t uid = t->status.uid[1];
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

/* Which right is missing depends on who we are. */
void attach_explain_environ(const struct target *t, struct cla_error *e)
{
    /* Our uid and another gid: not a matter of dumpability or capabilities. */
    if (creds_explain_gid_mismatch(t->pid, &t->status, e))
        return;
    err_set(e, -t->environ_errno, "cannot read the environment of pid %d: %s", (int)t->pid,
            strerror(t->environ_errno));
    if (geteuid() == 0)
        err_hint(e, "even root may not inspect this process: it holds capabilities "
                    "clrattach lacks, or a security module (Yama ptrace_scope, AppArmor, "
                    "SELinux) forbids it; give clrattach CAP_SYS_PTRACE in the target's user "
                    "namespace");
    else if (geteuid() == t->status.uid[1])
        /* Its own user may read a process's environ unless the process is not dumpable:
         * then the kernel wants CAP_SYS_PTRACE whatever the uid. */
        err_hint(e, "the process is not dumpable (prctl PR_SET_DUMPABLE 0, or a "
                    "setuid/file-capability program); root with CAP_SYS_PTRACE can read it");
    else
        err_hint(e, "run clrattach as the app's uid %u, or as root", (unsigned)t->status.uid[1]);
}

void attach_explain_died(int64_t after_ms, struct cla_error *e)
{
    err_set(e, -ESRCH,
            "the app died during the attach, before the runtime answered (within %lld ms of "
            "the request): the profiler (or what it started) killed it",
            (long long)after_ms);
    err_hint(e, "%s", died_hint);
}

/* Is the runtime configured to pause at startup until a ResumeRuntime?
 * DefaultDiagnosticPortSuspend=1, or a DiagnosticPorts entry, whose default mode is suspend unless
 * it says ",nosuspend". */
bool attach_explain_suspend_configured(const struct target *t)
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

void attach_explain_startup_unmapped(const char *path, int64_t waited_ms, struct cla_error *e)
{
    err_set(e, -EREMOTEIO,
            "the runtime took the profiler (StartupProfiler) and was resumed, but %s never "
            "showed in the app's maps within %lld ms: the runtime did not load it as it started",
            path, (long long)waited_ms);
    err_hint(e, "the app runs on without it. Likely causes: a wrong --clsid, a library it needs "
                "missing in the app's view, a build for another architecture or libc. The runtime "
                "reports its reason as a ProfilerMessage event (EventPipe), not on the app's "
                "console; try the same profiler with a plain attach, whose answer names it");
}

/* Why the search for the holder stopped short (attach.h), or NULL when it looked everywhere. */
static const char *holder_gap_reason(enum attach_holder_gap gap, char *buf, size_t size)
{
    switch (gap) {
    case ATTACH_HOLDER_LIBS_CAP:
        snprintf(buf, size, "the app maps more than %d libraries, and only those were read",
                 HOLDER_LIBS_MAX);
        return buf;
    case ATTACH_HOLDER_BYTES_CAP:
        snprintf(buf, size, "the search stopped after reading %d MiB of the app's libraries",
                 HOLDER_BYTES_MAX / (1024 * 1024));
        return buf;
    case ATTACH_HOLDER_NO_MAPS: return "its memory maps could not be read";
    case ATTACH_HOLDER_DEADLINE: return "the search ran out of time (--timeout)";
    case ATTACH_HOLDER_UNREAD:
        snprintf(buf, size,
                 "a mapped library's headers lie beyond the %d KiB read from each, or it "
                 "changed while read",
                 HOLDER_FILE_BYTES_MAX / 1024);
        return buf;
    case ATTACH_HOLDER_SEARCHED:
    default: return NULL;
    }
}

/* already_active: who holds the slot, and what stayed behind. */
static void already_active_hint(const struct attach_result *res, const struct hresult_info *hi,
                                struct cla_error *e)
{
    char holder[768] = "", why[128];
    const char *gap = res->holder[0] ? NULL : holder_gap_reason(res->holder_gap, why, sizeof(why));
    /* The holder is the very file sent now (an identical one attached before): one library,
     * named once. */
    bool same = res->holder[0] && strcmp(res->holder, res->delivered_path) == 0;
    if (same)
        snprintf(holder, sizeof(holder),
                 "%s, the library sent now, is itself the profiler loaded: it was attached "
                 "before%s%s%s",
                 res->holder, res->profiler_env[0] ? " (and " : "", res->profiler_env,
                 res->profiler_env[0] ? " is set in its environment)" : "");
    else if (res->holder[0] && res->profiler_env[0])
        snprintf(holder, sizeof(holder), "%s is loaded (and %s is set in its environment)",
                 res->holder, res->profiler_env);
    else if (res->holder[0])
        snprintf(holder, sizeof(holder), "%s is loaded and exports DllGetClassObject", res->holder);
    else if (gap)
        snprintf(holder, sizeof(holder), "The profiler holding the slot was not determined: %s%s%s",
                 gap, res->profiler_env[0] ? "; set in its environment: " : "", res->profiler_env);
    else if (res->profiler_env[0])
        snprintf(holder, sizeof(holder),
                 "%s is set in its environment: a profiler was loaded "
                 "at startup",
                 res->profiler_env);
    err_hint(e, "%s%s%s%s", holder, holder[0] ? ". " : "",
             res->mapped && !same
                 ? "The refused library stays mapped in the app (the runtime loaded it "
                   "before refusing and does not unload it); nothing else changed. "
                 : "",
             hi->next_step);
}

void attach_explain_answer(const struct target *t, uint32_t hr, bool startup,
                           const struct attach_result *res, struct cla_error *e)
{
    const struct hresult_info *hi = hresult_lookup(hr);
    if (res->died) {
        err_set(e, -ESRCH,
                "the runtime answered %s (0x%08X), then the app died %lld ms later: the "
                "profiler (or what it left running) killed it",
                hi->name, hr, (long long)res->died_after_ms);
        err_hint(e, "%s", died_hint);
        return;
    }
    err_set(e, -EREMOTEIO, "the runtime answered %s (0x%08X): %s", hi->name, hr, hi->cause);
    if (hr == ATTACH_HR_NOT_YET_AVAILABLE && !startup && attach_explain_suspend_configured(t))
        err_hint(e, "the runtime is suspended at startup (DOTNET_DefaultDiagnosticPortSuspend"
                    "=1 or a suspending DiagnosticPorts entry); run again with --startup to "
                    "load the profiler as a startup profiler and resume the runtime");
    else if (hr == ATTACH_HR_NOT_YET_AVAILABLE && !startup)
        err_hint(e, "the runtime is still starting (its socket is up before the runtime "
                    "can take a profiler, and no suspend is configured); attach again in a "
                    "moment");
    else if (hr == HR_PROFILER_ALREADY_ACTIVE)
        already_active_hint(res, hi, e);
    else if (hr == HR_E_INVALIDARG && startup && res->resume_owed &&
             res->env_sent == res->env_count)
        /* StartupProfiler is refused with E_INVALIDARG once the runtime is no longer paused. */
        err_hint(e,
                 "the app's environment asks for a pause at startup, but its runtime was resumed "
                 "already (by another tool?): attach without --startup");
    else
        err_hint(e, "%s", hi->next_step);
}
