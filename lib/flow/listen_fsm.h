/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `--listen`'s state machine for one runtime instance: the commands, the replies fed to it, how
 * it ends (pure: no I/O).
 */
#ifndef CLRATTACH_LISTEN_FSM_H
#define CLRATTACH_LISTEN_FSM_H

/*
 * What `--listen` does with one runtime instance (one advertised cookie), as a pure state
 * machine: no sockets, no clock of its own, no files. The caller (flow/listen.c) feeds it what
 * happened and asks it what to do next; the unit tests drive it with made-up events.
 *
 * The runtime serves exactly one command per connection and then closes it; it reconnects and
 * advertises again for the next one (dotnet/runtime src/native/eventpipe/ds-ipc.c:
 * connect_port_get_ipc_poll_handle_func connects and advertises when its cached stream is
 * gone; ds-server.c hands the stream over for one message). So every command below goes out on
 * a connection of its own, and the machine never has more than one in flight.
 *
 * The order, for a selected runtime:
 *   ProcessInfo (3, then 2, then 1 for a runtime that does not know the newer command)
 *   -> the selectors (command line, entry assembly): not selected = resumed and left alone
 *   -> ProcessEnvironment: does it pause at startup? (DOTNET_DiagnosticPorts tags; a runtime
 *      that will not say is taken to pause: "suspend" is the default tag)
 *   paused:   delivery -> SetEnvironmentVariable for each --env -> StartupProfiler -> Resume
 *             -> the verification (below)
 *   running:  delivery -> AttachProfiler, when the profiler loads on attach (nosuspend port)
 *   said it pauses but runs already (StartupProfiler refused with E_INVALIDARG past the moment
 *   the runtime pauses; served by an earlier clrattach): AttachProfiler when it loads on attach
 *
 * The verification: StartupProfiler only records the settings; the runtime loads the profiler
 * after the resume, and a load that fails then (a wrong CLSID, a missing library, another
 * architecture) is reported by nothing the runtime sends us. Without the app's /proc its maps
 * cannot be read, so the load is asked of the runtime itself: AttachProfiler with the very path
 * and CLSID StartupProfiler was given, no client data. A runtime that loaded the profiler at
 * startup answers CORPROF_E_PROFILER_ALREADY_ACTIVE; one that did not tries that load again and
 * answers why it fails (CLASS_E_CLASSNOTAVAILABLE for a wrong CLSID, ERROR_MOD_NOT_FOUND for a
 * library that cannot be loaded); one still starting answers CORPROF_E_NOT_YET_AVAILABLE and is
 * asked again until --timeout has passed since the resume. A path that cannot exist would not do:
 * the runtime loads the library (EEToProfInterfaceImpl::Init, CoCreateProfiler) before it looks
 * for an active profiler (ProfilingAPIUtility::LoadProfiler, dotnet/runtime
 * src/coreclr/vm/profilinghelper.cpp), so a missing path fails alike in both cases.
 *
 * The guarantee: from the first advertisement on, a runtime that may be paused is owed a
 * ResumeRuntime; every way out of the paused path (a refusal, a failed delivery, a transport
 * error, a timeout, the runtime not selected) goes through it, and once --resume-deadline has
 * passed since the first advertisement it is the next command whatever was due.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum listen_cmd {
    LISTEN_CMD_NONE = 0,
    LISTEN_CMD_PROCESS_INFO, /* arg: attempt 0..2 = ProcessInfo3, 2, 1 */
    LISTEN_CMD_ENVIRONMENT,  /* ProcessEnvironment */
    LISTEN_CMD_SETENV,       /* arg: index into --env */
    LISTEN_CMD_STARTUP,      /* StartupProfiler */
    LISTEN_CMD_ATTACH,       /* AttachProfiler */
    LISTEN_CMD_RESUME,       /* ResumeRuntime */
    LISTEN_CMD_VERIFY,       /* AttachProfiler with StartupProfiler's path and CLSID, no data */
};

enum listen_action {
    LISTEN_WAIT,    /* nothing now: a reply is awaited, or nothing before step.wake */
    LISTEN_SEND,    /* send step.cmd on the instance's next connection, then listen_fsm_replied */
    LISTEN_SELECT,  /* apply the selectors to ProcessInfo, then listen_fsm_selected */
    LISTEN_DELIVER, /* deliver the profiler, then listen_fsm_delivered */
    LISTEN_DONE,    /* finished: listen_fsm_end() tells how */
};

enum listen_end {
    LISTEN_END_NONE = 0,
    LISTEN_END_STARTUP_LOADED, /* resumed, and the verification answered ALREADY_ACTIVE */
    LISTEN_END_ATTACHED,       /* AttachProfiler accepted (a runtime that does not pause) */
    LISTEN_END_NOT_SELECTED,   /* the selectors left it alone (resumed if it may pause) */
    LISTEN_END_STARTUP_ONLY,   /* it does not pause, and the profiler does nothing on attach */
    LISTEN_END_ENV_RUNNING,    /* it does not pause, and --env would change a running app */
    LISTEN_END_FAILED,         /* a step failed: failed_cmd, err, hr say which and how */
    LISTEN_END_GONE,           /* the runtime stopped connecting (exited) */
    LISTEN_END_STARTUP_FAILED, /* resumed, but the verification says it was not loaded: verify_hr */
    LISTEN_END_UNVERIFIED,     /* resumed, and the verification got no answer within --timeout */
};

struct listen_fsm_cfg {
    size_t env_count;           /* --env variables to set in a paused runtime */
    bool attach_allowed;        /* the profiler loads on attach (profset/vendors.h) or --force */
    bool env_running;           /* --force: set --env in a runtime that runs already */
    int64_t resume_deadline_ms; /* --resume-deadline, from the first advertisement */
    int64_t timeout_ms;         /* --timeout: how long retries of a not-yet-ready runtime go on,
                                   and the verification after the resume */
};

/* What listen_fsm_next asks for. */
struct listen_step {
    enum listen_cmd cmd;
    int arg;
    int64_t wake; /* LISTEN_WAIT on a timer: ask again at this time (INT64_MAX: on an event) */
};

/* The answer to the command last handed out with LISTEN_SEND. */
struct listen_reply {
    int err;     /* < 0: no answer (connection failed, closed, timed out, malformed reply) */
    uint32_t hr; /* the HRESULT (0 for success; for ProcessInfo*, 0 = decoded) */
    int pauses;  /* ProcessEnvironment only: 1 pauses at startup, 0 does not, -1 not known */
};

struct listen_fsm {
    struct listen_fsm_cfg cfg;
    int phase; /* internal (listen_fsm.c) */
    int64_t started;
    int64_t resume_by;
    int64_t retry_at;
    int info_attempt;
    size_t env_next;
    int retries;
    enum listen_cmd inflight;
    bool paused; /* taken to pause at startup (the resume is owed until sent) */
    bool resume_sent;
    bool resumed;           /* ResumeRuntime answered with success */
    bool resume_answered;   /* ResumeRuntime answered at all (false: no answer, or not sent) */
    bool startup_taken;     /* StartupProfiler answered S_OK: the runtime holds the path, and
                               loads it once resumed, whatever happens to this instance after */
    bool seen_after_resume; /* the runtime connected again after ResumeRuntime went out */
    bool deadline_hit;
    bool stopped;          /* listen_fsm_stop() */
    bool was_running;      /* said it pauses, but ran already (StartupProfiler refused) */
    int64_t first_startup; /* when StartupProfiler was first answered */
    enum listen_end end;
    enum listen_end end_after_resume;
    enum listen_cmd failed_cmd;
    int err;
    uint32_t hr;
    size_t env_sent;
    int64_t verify_by;  /* the verification is given up at this time */
    int verify_err;     /* its last answer: < 0 none, else verify_hr */
    uint32_t verify_hr; /* 0: the runtime took the attach (the startup load had failed) */
};

/* Starts an instance at its first advertisement (`now` on the caller's clock, in ms). */
void listen_fsm_init(struct listen_fsm *f, const struct listen_fsm_cfg *cfg, int64_t now);

/* What to do now (see enum listen_action). Calling it again without feeding an event gives the
 * same answer, except that LISTEN_SEND is handed out once: the command is then in flight. */
enum listen_action listen_fsm_next(struct listen_fsm *f, int64_t now, struct listen_step *ret);

/* The command just handed out with LISTEN_SEND could not go yet (the runtime has no connection
 * to us at the moment): it is handed out again by the next listen_fsm_next(). */
void listen_fsm_unsent(struct listen_fsm *f);

/* Feeding the machine: the reply to the command in flight; the selectors' verdict; the
 * delivery's result (0 or a negative error); the runtime gone (its connection closed while
 * nothing was in flight, or no connection came within --timeout). */
void listen_fsm_replied(struct listen_fsm *f, int64_t now, const struct listen_reply *r);
void listen_fsm_selected(struct listen_fsm *f, bool match);
void listen_fsm_delivered(struct listen_fsm *f, int err);
void listen_fsm_gone(struct listen_fsm *f);

/* The runtime connected again (a new connection advertised with its cookie). Once the resume
 * went out this is what says it runs (seen_after_resume): a runtime that exits as it resumes
 * never comes back. */
void listen_fsm_connected(struct listen_fsm *f);

/* We are stopping (SIGTERM): a runtime that may be paused gets its resume next (after the
 * command in flight, if any) and the instance ends as failed with -EINTR; one that runs ends at
 * once, as soon as nothing is in flight. */
void listen_fsm_stop(struct listen_fsm *f, int64_t now);

/* How it ended (LISTEN_END_NONE while it runs). */
enum listen_end listen_fsm_end(const struct listen_fsm *f);

/* Stable names, for results and tests. */
const char *listen_cmd_name(enum listen_cmd c);
const char *listen_end_name(enum listen_end e);

/* HRESULTs the machine reacts to (docs/hresults.md). */
#define LISTEN_HR_UNKNOWN_COMMAND   0x80131385u /* DS_IPC_E_UNKNOWN_COMMAND: an older runtime */
#define LISTEN_HR_INVALIDARG        0x80070057u /* StartupProfiler before the pause point */
#define LISTEN_HR_NOT_YET_AVAILABLE 0x8013135Bu /* AttachProfiler before the runtime started */
#define LISTEN_HR_ALREADY_ACTIVE    0x8013136Au /* AttachProfiler: a profiler is loaded */

#endif
