/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `attach --listen` and `watch --listen`: the options and the one entry point of the loop that
 * serves runtimes connecting to clrattach's socket.
 */
#ifndef CLRATTACH_LISTEN_H
#define CLRATTACH_LISTEN_H

/*
 * `attach --listen` and `watch --listen`: clrattach listens on a Unix socket in a directory it
 * shares with the app (an emptyDir mounted in both containers), and the app's runtime, started
 * with DOTNET_DiagnosticPorts=<that socket as the app sees it>, connects to it. Nothing of the
 * app is visible from here: no /proc entry, no root, no shared pid namespace. What clrattach
 * knows of the app is what its runtime says over the socket, and what the kernel says of the
 * peer (SO_PEERCRED).
 *
 * The loop: the listening socket (runtime/listen_sock.h) hands over advertised connections;
 * each runtime instance (cookie) has a state machine (flow/listen_fsm.h) that says which
 * command goes on its next connection; the commands are sent and their replies read without
 * blocking, so a runtime that stalls delays only itself, and a stop signal is seen between
 * two turns. The profiler is delivered into the shared directory (deliver/), named there as the
 * app sees it (--app-dir).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "flow/attach.h"
#include "runtime/ipc.h"
#include "runtime/listen_sock.h"

struct listen_opts {
    const char *path;             /* --listen: the socket, as we see it */
    struct listen_sock_opts sock; /* --socket-mode, --socket-owner */
    const char *deliver_dir;      /* --deliver-dir: the shared directory, as we see it */
    const char *app_dir;          /* --app-dir: the same directory as the app sees it */
    const char *profiler_path;    /* --profiler, and the build choice as for attach */
    const char *entry;
    const char *rid;
    bool force_rid;
    bool force; /* --force: a profiler inert on attach to a running runtime, --env in one */
    bool keep;  /* --keep: what was delivered stays after a refusal */
    struct ipc_guid clsid;
    const uint8_t *client_data; /* AttachProfiler only (a runtime that does not pause) */
    size_t client_data_len;
    const char *const *env; /* --env "NAME=VALUE", checked, {dir}/{entry} expanded here */
    size_t env_count;
    bool show_env;
    uint32_t attach_timeout_ms;
    int64_t timeout_ms;         /* --timeout: each exchange; a runtime gone quiet this long */
    int64_t resume_deadline_ms; /* --resume-deadline, from a runtime's first advertisement */
    const char *match_cmdline;  /* substring of ProcessInfo's command line, NULL = any */
    const char *match_entry;    /* the entry assembly's name (ProcessInfo2+), NULL = any */
    bool once;                  /* attach --listen: the first runtime selected, then return */
    struct attach_stop *stop;   /* SIGTERM and friends, recorded by the caller's handler */
    /* Called once per runtime instance served (not for one the selectors left alone), with
     * its result. */
    void (*on_result)(const struct attach_result *res, void *userdata);
    /* Called when something is wrong but the loop goes on: the socket's name was removed or
     * replaced by the app (once each time it is found so). May be NULL. */
    void (*on_warning)(const struct cla_error *w, void *userdata);
    /* Called once, when the socket is listening (a ready file). May be NULL. */
    void (*on_listening)(void *userdata);
    void *userdata;
};

/* Runs until stopped (o->stop), or, with o->once, until one instance is served. Returns 0, or
 * a negative error when the socket could not be set up or failed (e says why; nothing was
 * served then), -EINTR when stopped. */
int listen_run(const struct listen_opts *o, struct cla_error *e);

#endif
