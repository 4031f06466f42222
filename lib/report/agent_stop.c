/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a pod's profile started and can be stopped, stopped when its annotation goes: perfmap's
 * DisablePerfMap, otel's stop, in each runtime the profile served. A profiler stays loaded (a
 * runtime cannot unload one). Each stop runs in a child process under a deadline, as the target's
 * user (perfmap_run and otel_run switch), on the very instance (pid and start time) served.
 */
#include "report/agent_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "target/target.h"

void agent_stop_pod(struct agent *a, const struct agent_pod *p)
{
    for (size_t i = 0; i < AGENT_CHOSEN_MAX; i++) {
        struct agent_chosen *c = &a->chosen[i];
        if (!c->ok || !c->entry || strcmp(c->uid, p->uid) != 0)
            continue;
        enum agent_mode m = c->entry->profile->mode;
        c->ok = false; /* stopped once */
        if (m != AGENT_MODE_PERFMAP && m != AGENT_MODE_OTEL)
            continue;
        if (a->n_stops == AGENT_STOPS_MAX) {
            agent_log(a, "pod %s/%s: pid %d not stopped: too many stops at once", p->ns, p->name,
                      (int)c->pid);
            continue;
        }
        struct agent_stop *s = &a->stops[a->n_stops++];
        *s = (struct agent_stop){.pid = c->pid, .starttime = c->starttime, .entry = c->entry};
        memcpy(s->ns, p->ns, sizeof(s->ns));
        memcpy(s->name, p->name, sizeof(s->name));
    }
}

/* In the child: the instance pinned again (a process that took the pid since is left alone),
 * then the stop, as the target's user. Exit 0 when it answered with success. */
static _Noreturn void stop_child(const struct agent *a, const struct agent_stop *s)
{
    struct target tg;
    struct attach_result *res = calloc(1, sizeof(*res));
    if (!res || target_open(a->o->base.proc_dirfd, s->pid, &tg, NULL) < 0)
        _exit(3);
    if (tg.stat.starttime != s->starttime)
        _exit(2);
    int r;
    if (s->entry->profile->mode == AGENT_MODE_PERFMAP) {
        struct perfmap_opts po = s->entry->po;
        po.enable = false;
        r = perfmap_run(&po, &tg, res);
    } else {
        struct otel_opts oo = s->entry->oo;
        oo.stop = true;
        r = otel_run(&oo, &tg, res);
    }
    _exit(r == 0 ? 0 : 1);
}

static void stop_ended(struct agent *a, size_t i, int status)
{
    struct agent_stop *s = &a->stops[i];
    const char *what = s->entry->profile->mode == AGENT_MODE_PERFMAP ? "perf map disabled"
                                                                     : "OpenTelemetry stopped";
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        agent_log(a, "pod %s/%s: its annotation removed: %s in pid %d", s->ns, s->name, what,
                  (int)s->pid);
    else
        agent_log(a, "pod %s/%s: its annotation removed: pid %d not stopped (%s %d)", s->ns,
                  s->name, (int)s->pid, WIFEXITED(status) ? "exit status" : "signal",
                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    a->stops[i] = a->stops[--a->n_stops];
}

void agent_stops_step(struct agent *a, int64_t now_ms)
{
    for (size_t i = 0; i < a->n_stops;) {
        struct agent_stop *s = &a->stops[i];
        int status = 0;
        if (s->child == 0) {
            pid_t c = fork();
            if (c == 0)
                stop_child(a, s);
            if (c < 0) {
                agent_log(a, "pod %s/%s: pid %d not stopped: no process (%s)", s->ns, s->name,
                          (int)s->pid, strerror(errno));
                a->stops[i] = a->stops[--a->n_stops];
                continue;
            }
            s->child = c;
            s->deadline_ms = now_ms + AGENT_STOP_WAIT_MS;
        }
        if (waitpid(s->child, &status, WNOHANG) == s->child) {
            stop_ended(a, i, status);
            continue;
        }
        if (now_ms >= s->deadline_ms) {
            kill(s->child, SIGKILL);
            s->deadline_ms = INT64_MAX; /* reaped at a later step */
        }
        i++;
    }
}

void agent_stops_end(struct agent *a)
{
    for (size_t i = 0; i < a->n_stops; i++) {
        if (a->stops[i].child > 0) {
            kill(a->stops[i].child, SIGKILL);
            (void)waitpid(a->stops[i].child, NULL, 0);
        }
    }
    a->n_stops = 0;
}
