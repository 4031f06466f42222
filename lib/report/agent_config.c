/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's profiles file: read and checked at start (an error stops the agent), looked at
 * every AGENT_CONFIG_CHECK_MS after, and reloaded when it changed (a ConfigMap's update swaps a
 * symlink: the path is followed). A change that does not check keeps the last good profiles.
 */
#include "report/agent_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/util.h"

int agent_profiles_load(const char *path, struct agent_profiles *ret, struct cla_error *e)
{
    /* The admin's file, in the agent's own image or ConfigMap: a pod cannot write it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return err_setsys(e, -errno, "profiles: %s", path);
    struct stat st;
    _cleanup_free_ char *buf = NULL;
    size_t len = 0;
    int r = fstat(fd, &st) < 0 ? -errno : !S_ISREG(st.st_mode) ? -EINVAL : 0;
    if (r == 0)
        r = util_read_all(fd, AGENT_CONFIG_MAX, &buf, &len);
    close(fd);
    if (r == -E2BIG)
        return err_set(e, r, "profiles: %s is larger than %d bytes", path, AGENT_CONFIG_MAX);
    if (r < 0)
        return err_setsys(e, r, "profiles: %s is not a readable regular file", path);
    r = agent_profiles_parse(buf, len, ret, e);
    if (r < 0)
        err_prefix(e, "profiles: %s", path);
    return r;
}

int agent_profiles_check(const char *path, struct cla_error *e)
{
    struct agent_profiles profiles = {0};
    struct agent_plan *plan = NULL;
    const struct watch_opts base = {0};
    const struct perfmap_opts pbase = {0};
    const struct otel_opts obase = {0};
    int r = agent_profiles_load(path, &profiles, e);
    if (r == 0 && profiles.n == 0)
        r = err_set(e, -EINVAL, "profiles: %s defines no profile", path);
    if (r == 0)
        r = agent_plan_build(&profiles, &base, &pbase, &obase, &plan, e);
    int n = plan ? (int)plan->n : 0;
    agent_plan_free(plan);
    agent_profiles_free(&profiles);
    return r < 0 ? r : n;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Loads the file into a new plan. */
static int load_plan(struct agent *a, struct agent_plan **ret, struct cla_error *e)
{
    const struct agent_opts *o = a->o;
    struct agent_profiles profiles = {0};
    int r = agent_profiles_load(o->profiles_path, &profiles, e);
    if (r == 0 && profiles.n == 0)
        r = err_set(e, -EINVAL, "profiles: %s defines no profile", o->profiles_path);
    if (r == 0)
        r = agent_plan_build(&profiles, &o->base, &o->perfmap_base, &o->otel_base, ret, e);
    agent_profiles_free(&profiles);
    return r;
}

int agent_config_start(struct agent *a, struct cla_error *e)
{
    (void)stat(a->o->profiles_path, &a->config_st);
    a->config_check_ms = util_now_ms() + AGENT_CONFIG_CHECK_MS;
    return load_plan(a, &a->plan, e);
}

void agent_config_check(struct agent *a, int64_t now_ms)
{
    if (now_ms < a->config_check_ms)
        return;
    a->config_check_ms = now_ms + AGENT_CONFIG_CHECK_MS;
    struct stat st;
    if (stat(a->o->profiles_path, &st) < 0 || same_file(&st, &a->config_st))
        return; /* gone for now (a ConfigMap mid-swap): the last good profiles stay */
    a->config_st = st;
    struct agent_plan *plan = NULL;
    struct cla_error e = {0};
    if (load_plan(a, &plan, &e) < 0) {
        a->reloads_refused++;
        agent_log(a, "%s; the profiles changed but are refused: the last good ones stay", e.msg);
        return;
    }
    /* The old plan stays with the new one: attaches in flight run with its options. */
    plan->older = a->plan;
    a->plan = plan;
    a->reloads++;
    agent_pods_rejudge(&a->pods);
    a->status_dirty = a->look_again = true;
    agent_log(a, "profiles reloaded from %s (%zu profiles)", a->o->profiles_path, plan->n);
}
