/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's status file: what it did per pod and how its view of the API stands, rewritten
 * whole (a temporary, then rename) so that `clrattach agent --status` always reads one state.
 */
#include "report/agent_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/opfile.h"
#include "base/util.h"

static void write_pods(FILE *out, const struct agent_pods *t)
{
    fprintf(out, "pods: %zu annotated\n", t->n);
    for (size_t i = 0; i < t->n; i++) {
        const struct agent_pod *p = t->v[i];
        /* The annotation's value is the pod owner's text: never written here. */
        fprintf(out, "pod %s/%s: %s", p->ns, p->name, agent_pod_state_name(p->state));
        if (p->state == AGENT_POD_ALLOWED)
            fprintf(out, " profile=%s", p->profile);
        fprintf(out, " attached=%u failed=%u last=%s", p->attached, p->failed,
                p->last[0] ? p->last : "-");
        if (p->state == AGENT_POD_REFUSED)
            fprintf(out, " refused: %s", p->why);
        fputc('\n', out);
    }
}

static int write_to(struct agent *a, int fd)
{
    FILE *out = fdopen(fd, "w");
    if (!out) {
        close(fd);
        return -1;
    }
    struct k8s_follow_stats st;
    k8s_follow_stats(a->f, &st);
    fprintf(out, "clrattach agent on node %s\n", a->o->node);
    fprintf(out,
            "api: %s, resourceVersion %s, lists %llu, watches %llu, 410 relists %llu, stalls "
            "%llu, failures %llu, events %llu, bookmarks %llu\n",
            st.synced ? "synced" : "not synced yet",
            st.resource_version[0] ? st.resource_version : "-", (unsigned long long)st.lists,
            (unsigned long long)st.watches, (unsigned long long)st.gone,
            (unsigned long long)st.stalls, (unsigned long long)st.failures,
            (unsigned long long)st.events, (unsigned long long)st.bookmarks);
    fprintf(out, "profiles: %zu from %s (reloads %llu, refused changes %llu)\n", a->plan->n,
            a->o->profiles_path, (unsigned long long)a->reloads,
            (unsigned long long)a->reloads_refused);
    fprintf(out, "warnings: %llu sent, %llu not sent\n", (unsigned long long)a->warnings,
            (unsigned long long)a->warnings_failed);
    write_pods(out, &a->pods);
    return fclose(out) == 0 ? 0 : -1;
}

void agent_status_write(struct agent *a, int64_t now_ms, bool force)
{
    if (!a->o->status_path || !a->f || !a->plan)
        return;
    if (!force && (!a->status_dirty || now_ms < a->status_ms + AGENT_STATUS_MIN_MS))
        return;
    a->status_dirty = false;
    a->status_ms = now_ms;
    char tmp[4200];
    int n = snprintf(tmp, sizeof(tmp), "%s.tmp", a->o->status_path);
    struct cla_error e = {0};
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return;
    int fd = opfile_open_for_write(tmp, "--status-file", O_CREAT | O_TRUNC, 0644, &e);
    bool ok = fd >= 0 && write_to(a, fd) == 0 &&
              renameat(AT_FDCWD, tmp, AT_FDCWD, a->o->status_path) == 0;
    /* Said once until it works again: not a line a second. */
    if (!ok && !a->status_failed)
        agent_log(a, "status file %s not written%s%s", a->o->status_path, e.msg[0] ? ": " : "",
                  e.msg);
    a->status_failed = !ok;
}
