/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every run that talks to one runtime ends in: the outcome (its name and exit code), what
 * the result is about, and the fixed-size `struct attach_result` the CLI prints once and reports.
 * The helpers that set an outcome in a result are here too. Pure: no I/O, nothing here prints.
 */
#ifndef CLRATTACH_OUTCOME_H
#define CLRATTACH_OUTCOME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/bounds.h"
#include "base/err.h"
#include "profset/otel_status.h"

enum attach_outcome {
    ATTACH_OK = 0,
    ATTACH_ALREADY_ACTIVE,
    ATTACH_NOT_FOUND,  /* no such process */
    ATTACH_NOT_DOTNET, /* a process, but no diagnostic socket */
    ATTACH_PERMISSION,
    ATTACH_DELIVERY,    /* the profiler could not be placed in the target's view */
    ATTACH_LOAD_FAILED, /* the runtime answered with a failure HRESULT */
    ATTACH_NOT_READY,   /* runtime suspended at startup or shutting down */
    ATTACH_PROTOCOL,    /* malformed reply, stale socket, connection closed, timeout */
    ATTACH_USAGE,
    ATTACH_INTERNAL,
    ATTACH_INTERRUPTED, /* stopped by a signal before AttachProfiler was sent (attach_stop), or
                           abandoned by a watcher that was stopped while it ran */
    ATTACH_TARGET_DIED, /* the runtime answered, then the app died within the settle time */
    ATTACH_DEPENDENCY,  /* a library the profiler needs is not in the target's view: not sent */
    ATTACH_INERT,       /* a profiler known to do nothing on attach (profset/vendors.h): not sent */
    ATTACH_STARTUP_LOADED,   /* --startup: StartupProfiler, ResumeRuntime, then seen mapped */
    ATTACH_STARTUP_FAILED,   /* --startup: resumed, but the profiler never showed in the maps */
    ATTACH_PERFMAP_ENABLED,  /* perfmap enable: the runtime took EnablePerfMap */
    ATTACH_PERFMAP_DISABLED, /* perfmap disable: the runtime took DisablePerfMap */
    ATTACH_HOOK_APPLIED,     /* startup-hook: the runtime ran the hook's Initialize */
    ATTACH_RUNTIME_TOO_OLD,  /* perfmap, startup-hook: a runtime before .NET 8, nothing sent */
    ATTACH_HOOK_START_ONLY,  /* startup-hook: a hook for process start only (profset/hooks.h) */
    ATTACH_OTEL_STARTED,     /* otel: the agent's status says started (or still starting) */
    ATTACH_OTEL_STOPPED,     /* otel --stop: the agent's status says stopped */
    ATTACH_OTEL_FAILED,      /* otel: the hook ran, its status says refused or failed, or none */
    ATTACH_OTEL_SDK_PRESENT, /* otel: the app runs an OpenTelemetry SDK of its own: not sent */
};
#define ATTACH_OUTCOME_LAST ATTACH_OTEL_SDK_PRESENT

/* What a result is about: a profiler (attach, watch), a perf map (perfmap enable|disable) or a
 * startup hook (startup-hook). The outcomes are shared; the JSON's command, the Event's reasons
 * and the fields shown follow the kind. */
enum attach_kind {
    ATTACH_KIND_PROFILER = 0,
    ATTACH_KIND_PERFMAP_ENABLE,
    ATTACH_KIND_PERFMAP_DISABLE,
    ATTACH_KIND_STARTUP_HOOK,
    ATTACH_KIND_OTEL_START, /* otel: the OpenTelemetry agent, started */
    ATTACH_KIND_OTEL_STOP,  /* otel --stop */
};
#define ATTACH_KIND_LAST ATTACH_KIND_OTEL_STOP

/* The outcomes in which what was asked for happened: a profiler loaded (attach_outcome_loaded),
 * a perf map enabled or disabled, a startup hook run. */
bool attach_outcome_ok(enum attach_outcome o);

/* The outcomes in which the profiler was loaded: attached, or loaded at startup. */
bool attach_outcome_loaded(enum attach_outcome o);

/* Stable lower-case name ("attached", "already_active", ...) for JSON and Events. */
const char *attach_outcome_name(enum attach_outcome o);

/* The outcome a runtime's answer to AttachProfiler or StartupProfiler stands for, by the class
 * of its HRESULT (runtime/hresult.h). */
enum attach_outcome attach_outcome_of_hresult(uint32_t hr);

/* The documented process exit code of an outcome (docs/exit-codes.md). */
int attach_outcome_exit_code(enum attach_outcome o);

/* already_active without a holder named: why the search for it could not tell. */
enum attach_holder_gap {
    ATTACH_HOLDER_SEARCHED = 0, /* every mapped library looked at: no profiler among them */
    ATTACH_HOLDER_NO_MAPS,      /* the target's maps could not be read */
    ATTACH_HOLDER_LIBS_CAP,     /* more than HOLDER_LIBS_MAX libraries mapped */
    ATTACH_HOLDER_BYTES_CAP,    /* HOLDER_BYTES_MAX read before the search ended */
    ATTACH_HOLDER_DEADLINE,     /* --timeout passed before the search ended */
    ATTACH_HOLDER_UNREAD,       /* a library's headers lay past HOLDER_FILE_BYTES_MAX */
};

/* CORPROF_E_NOT_YET_AVAILABLE: the runtime has not started (suspended at startup, or starting). */
#define ATTACH_HR_NOT_YET_AVAILABLE 0x8013135Bu

/* Fixed size on purpose: `watch` runs each attach in a child process that sends this struct back
 * over a pipe. The one pointer, rid_source, points at a static string (attach_rid_sources); the
 * receiver re-derives it and terminates every string (watch_pool.c), a new field must be added
 * there. */
struct attach_result {
    enum attach_outcome outcome;
    pid_t pid;
    pid_t nspid;
    /* The runtime connected to clrattach's socket (--listen): nspid is the pid it advertised (in
     * its own PID namespace, its word only), pid its SO_PEERCRED pid in clrattach's PID namespace,
     * 0 when it has none there (a sidecar sharing only a volume): then no node-side pid is known
     * and no output gives one. */
    bool listen;
    uid_t uid;
    gid_t gid;
    uint64_t starttime;
    char command_line[512];
    char tmpdir[TARGET_PATH_MAX];
    char socket_name[96];
    bool have_runtime; /* ProcessInfo answered */
    char runtime_version[64];
    char runtime_rid[64];
    char os_arch[32];
    char target_rid[32];                  /* the portable RID the profiler was chosen for */
    const char *rid_source;               /* one of attach_rid_sources[], or NULL */
    char variant[32];                     /* bundle subdirectory used, "" for a single .so */
    char delivered_path[TARGET_PATH_MAX]; /* the profiler as the app sees it */
    /* With --env (or a known vendor's startup settings): the env loader delivered beside the
     * profiler, what the runtime was given to dlopen() instead ("" without one) */
    char loader_path[TARGET_PATH_MAX];
    char delivered_dir[TARGET_PATH_MAX]; /* a profiler directory delivered whole, "" for a file */
    char placement[512];                 /* directories passed over, and why */
    bool mapped;                         /* the delivered file shows in the target's maps */
    bool removed; /* what this run delivered was removed after a failed load */
    bool died;    /* the app died within the settle time after the answer */
    int64_t died_after_ms;
    char holder[256]; /* already_active: the profiler the target already has loaded */
    /* The dependency check could not look everywhere the loader would (a search list past its
     * cap) and did not find a library in the part it checked: "not checked: ..." ("" else). */
    char dependency_note[256];
    /* attach --listen: how a startup load was verified without the app's maps ("" else). */
    char verify_note[192];
    enum attach_holder_gap holder_gap; /* none named: why the search could not tell */
    char sha256[65];
    bool reused;
    bool startup_load;   /* loaded as a startup profiler (--startup) */
    bool expected_inert; /* --force sent a profiler known to do nothing on attach */
    bool have_hresult;
    uint32_t hresult;
    int64_t duration_ms;
    /* Where that time went, once the request was sent (have_hresult): the runtime's answer (for
     * --startup: the variables, StartupProfiler and ResumeRuntime), then the wait after it (the
     * settle time, and for --startup the look for the library in the maps). */
    int64_t answer_ms;
    int64_t settle_wait_ms;
    char profiler_env[160]; /* a profiler already configured by the environment */
    /* The names of the variables a known vendor's code needs at startup, sent with the
     * operator's --env (profset/vendors.h: startup_env), "" for none. */
    char vendor_env[160];
    /* --startup on a runtime that may be paused: ResumeRuntime was owed, whether it went out and
     * was answered with success (resumed), and when, from the attach's start. */
    bool resume_owed;
    bool resumed;
    int64_t resumed_after_ms;
    /* --env sent: each "NAME" (or "NAME=VALUE" with --show-env), rendered; env_sent of them
     * were answered with success. */
    uint32_t env_count;
    uint32_t env_sent;
    char env[ENV_VARS_MAX][ENV_SHOWN_MAX];
    enum attach_kind kind;
    /* perfmap: the type asked for (enum ipc_perfmap_type, 0 for disable), and where the runtime
     * writes (or wrote) its files as the target sees them; `node_root` is that view from here
     * ("/proc/<pid>/root": what perf and eBPF profilers on the node open). "" for a file the type
     * does not write. */
    uint32_t perfmap_type;
    char perfmap_path[TARGET_PATH_MAX]; /* <dir>/perf-<nspid>.map */
    char jitdump_path[TARGET_PATH_MAX]; /* <dir>/jit-<nspid>.dump */
    char node_root[64];
    int64_t perfmap_size; /* bytes of the perf map right after the answer; -1 not seen */
    /* otel: the agent's status read back after the answer (state OTEL_STATE_NONE: none read),
     * and where it is in the target's view */
    struct otel_status otel;
    char otel_status_path[TARGET_PATH_MAX];
    struct cla_error error; /* for every outcome but ATTACH_OK */
};

/* What --force on a profiler known to do nothing on attach leaves (expected_inert): said in the
 * text, the JSON's "note" and the Event. */
extern const char attach_inert_note[];

/* Where the target's runtime identifier came from: "--rid", "runtime", "maps+exe", indexed by
 * enum target_rid_source (profset/target_rid.h). */
#define ATTACH_RID_SOURCES 3
extern const char *const attach_rid_sources[ATTACH_RID_SOURCES];

/* Sets res->outcome to `o` and its error code (unless one is set already); returns `code` when
 * negative, else -EPROTO: the way every flow ends a run that failed. */
int attach_fail(struct attach_result *res, enum attach_outcome o, int code);

/* The outcome an errno from inspecting or reaching the target stands for: target_not_found,
 * permission_denied, internal_error (no memory), else protocol_error (the target's data broke a
 * rule: the operator's inputs are checked before the target is read). */
enum attach_outcome attach_outcome_of_errno(int r);

/* Records the runtime's answer `hr` to the command sent (have_hresult, hresult). */
void attach_record_hresult(struct attach_result *res, uint32_t hr);

/* A command the runtime has only from .NET `min_major` on, asked for by what ProcessInfo said
 * (attach_runtime_major): 0 when it may be sent, else ATTACH_RUNTIME_TOO_OLD with a message
 * naming `command` and the version, and `hint` as the next step. */
int attach_require_runtime(struct attach_result *res, int min_major, const char *command,
                           const char *hint);

/* The runtime's major version from ProcessInfo's product version ("10.0.12+..." -> 10), -1 when
 * it did not say (ProcessInfo v1, which runtimes before .NET 7 answer, or no ProcessInfo). */
int attach_runtime_major(const struct attach_result *res);

#endif
