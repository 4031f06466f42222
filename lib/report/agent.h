/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `clrattach agent`: the node mode as a long-running process. It follows its node's pods
 * (k8s_follow), judges each one's clrattach.io/profile annotation (agent_pods), and runs the
 * watcher's loop (flow/watch.c: its table, pool and per-attach child, as the target's user)
 * with each process matched to a pod's container by cgroup and attached per that pod's
 * profile (agent_plan). docs/agent.md.
 */
#ifndef CLRATTACH_AGENT_H
#define CLRATTACH_AGENT_H

#include <stdbool.h>

#include "base/err.h"
#include "flow/otel.h"
#include "flow/perfmap.h"
#include "flow/watch_opts.h"
#include "report/agent_profiles.h"
#include "report/k8s_config.h"
#include "report/k8s_event.h"

struct agent_opts {
    const struct k8s_config *cfg; /* in-cluster, as the Events use it */
    const char *node;
    const char *profiles_path; /* checked at start (an error stops it), reloaded on change */
    const char *status_path;   /* rewritten (atomically) as things change; NULL: none */
    long watch_timeout_s;      /* 0: K8S_WATCH_TIMEOUT_S */
    bool warnings;             /* post Warning Events for refused pods */
    /* The watcher's options for every attach: /proc, timeouts, seccomp stages, interval, stop,
     * ready file; its selector, hooks and callbacks are the agent's own. */
    struct watch_opts base;
    struct perfmap_opts perfmap_base; /* perfmap profiles: all but the target */
    struct otel_opts otel_base;       /* otel profiles: all but agent, endpoint and env */
    /* An attach's new outcome, for the pod it was for and the profile it ran (print it, send
     * its Event); both NULL for a process the agent no longer knows. */
    void (*on_attach)(const struct attach_result *r, bool retry, const struct k8s_pod_ref *pod,
                      const struct agent_profile *profile, void *userdata);
    void (*on_log)(const char *msg, void *userdata);
    void *userdata;
};

/* Reads and checks the profiles at `path` (at most AGENT_CONFIG_MAX bytes). -errno, -EINVAL
 * with e naming the profile and field. */
int agent_profiles_load(const char *path, struct agent_profiles *ret, struct cla_error *e);

/* Checks the profiles at `path` as the agent would load them (every field, the CLSIDs, an otel
 * profile's endpoint), for `agent --check-profiles`. Returns how many profiles, or -errno with e
 * set. */
int agent_profiles_check(const char *path, struct cla_error *e);

/* Runs until *o->base.stop. Returns 0, or -errno with e set when it cannot start (profiles
 * refused, follower not made) or /proc cannot be scanned. */
int agent_run(const struct agent_opts *o, struct cla_error *e);

#endif
