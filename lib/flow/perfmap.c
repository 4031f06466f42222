/* SPDX-License-Identifier: Apache-2.0 */
/* The perfmap flow: EnablePerfMap or DisablePerfMap sent to a runtime the attempt core reached,
 * the answer decoded, the paths of the files the runtime writes. */
#include "flow/perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/render.h"
#include "base/util.h"
#include "runtime/hresult.h"
#include "runtime/ipc.h"
#include "runtime/ipc_conn.h"
#include "target/creds.h"
#include "target/proc_environ.h"
#include "target/rootfs.h"
#include "target/target.h"

/* The command ids the runtime does not know before .NET 8 (it answers UNKNOWN_COMMAND), and
 * the answer of a runtime built without perf maps (NativeAOT, Mono: ds-rt-*.h return
 * DS_IPC_E_NOTSUPPORTED). */
#define HR_UNKNOWN_COMMAND 0x80131385u
#define HR_NOT_SUPPORTED   0x80131515u

/* The first .NET with EnablePerfMap, DisablePerfMap and ApplyStartupHook (dotnet/runtime PRs
 * 85801 and 86813). */
#define PERFMAP_MIN_MAJOR 8

void perfmap_dir_of(const char *env, size_t env_len, char *out, size_t size)
{
    static const char *const names[] = {"DOTNET_PerfMapJitDumpPath", "COMPlus_PerfMapJitDumpPath"};
    const char *v = NULL;
    size_t n = 0;
    for (size_t i = 0; i < ARRAY_SIZE(names) && !v; i++)
        if (env && proc_environ_get(env, env_len, names[i], &v, &n) != 1)
            v = NULL;
    if (!v || n == 0) {
        snprintf(out, size, "/tmp");
        return;
    }
    /* The runtime joins it with "/perf-<pid>.map" as it is; one trailing '/' is dropped only
     * so that the path we show is the one it opens with its doubled slash collapsed. */
    if (n > 1 && v[n - 1] == '/')
        n--;
    render_text(v, n, out, size);
}

/* The paths the result names: where the runtime writes, in its view and from ours. */
static void fill_paths(const struct perfmap_opts *o, const struct target *t,
                       struct attach_result *res)
{
    char dir[TARGET_PATH_MAX / 2];
    perfmap_dir_of(t->environ, t->environ_len, dir, sizeof(dir));
    uint32_t type = o->enable ? o->type : IPC_PERFMAP_ALL;
    if (type == IPC_PERFMAP_ALL || type == IPC_PERFMAP_PERFMAP)
        snprintf(res->perfmap_path, sizeof(res->perfmap_path), "%s/perf-%d.map", dir,
                 (int)res->nspid);
    if (type == IPC_PERFMAP_ALL || type == IPC_PERFMAP_JITDUMP)
        snprintf(res->jitdump_path, sizeof(res->jitdump_path), "%s/jit-%d.dump", dir,
                 (int)res->nspid);
    snprintf(res->node_root, sizeof(res->node_root), "%.40s/%d/root", o->proc_path, (int)t->pid);
}

/* The perf map's size in the target's view, looked at as its user right after the answer:
 * evidence from outside that the runtime opened it (a rundown of the methods compiled so far is
 * written at once). -1 when it is not there or not a regular file. */
static int64_t map_size(const struct target *t, const char *path)
{
    _cleanup_close_ int fd =
        rootfs_open(t->rootfd, path, ROOTFS_REG, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, NULL);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return -1;
    return (int64_t)st.st_size;
}

static const char *command_name(const struct perfmap_opts *o)
{
    return o->enable ? "EnablePerfMap" : "DisablePerfMap";
}

/* The runtime's answer, decoded. */
static int settle_answer(const struct perfmap_opts *o, const struct target *t, uint32_t hr,
                         struct attach_result *res)
{
    struct cla_error *e = &res->error;
    char hrs[16];
    hresult_format(hr, hrs, sizeof(hrs));
    attach_record_hresult(res, hr);
    if (hr == 0) {
        if (o->enable && res->perfmap_path[0])
            res->perfmap_size = map_size(t, res->perfmap_path);
        /* Disable names what the runtime wrote, not what it might have: whichever kind was
         * enabled (by EnablePerfMap or DOTNET_PerfMapEnabled) is the file there. */
        if (!o->enable && map_size(t, res->perfmap_path) < 0)
            res->perfmap_path[0] = '\0';
        if (!o->enable && map_size(t, res->jitdump_path) < 0)
            res->jitdump_path[0] = '\0';
        res->outcome = o->enable ? ATTACH_PERFMAP_ENABLED : ATTACH_PERFMAP_DISABLED;
        return 0;
    }
    if (hr == HR_UNKNOWN_COMMAND) {
        err_set(e, -EREMOTEIO,
                "the runtime does not know %s (%s, CORDIAGIPC_E_UNKNOWN_COMMAND): "
                "it is older than .NET 8",
                command_name(o), hrs);
        err_hint(e, "restart the app with DOTNET_PerfMapEnabled=1 (docs/perfmap.md)");
        return attach_fail(res, ATTACH_RUNTIME_TOO_OLD, -EREMOTEIO);
    }
    if (hr == HR_NOT_SUPPORTED) {
        err_set(e, -EREMOTEIO,
                "the runtime refused %s with %s (COR_E_NOTSUPPORTED): it has no "
                "perf map support (NativeAOT and Mono have none)",
                command_name(o), hrs);
        err_hint(e, "NativeAOT code is named by its own symbols: perf needs no map for it");
        return attach_fail(res, ATTACH_LOAD_FAILED, -EREMOTEIO);
    }
    const struct hresult_info *hi = hresult_lookup(hr);
    err_set(e, -EREMOTEIO, "the runtime refused %s: %s (%s)", command_name(o), hi->name, hrs);
    err_hint(e, "%s", hi->next_step);
    return attach_fail(res, ATTACH_LOAD_FAILED, -EREMOTEIO);
}

static int run(const struct perfmap_opts *o, struct target *t, struct creds_saved *cs,
               struct attach_result *res)
{
    struct cla_error *e = &res->error;
    _cleanup_close_ int sockfd = -1;
    struct attach_conn c = {.sockfd = -1};
    int r = attach_reach(t, o->timeout_ms, cs, &c, res);
    sockfd = c.sockfd;
    if (r < 0)
        return r;
    fill_paths(o, t, res);
    /* Before anything is sent: a runtime without the command would only answer
     * UNKNOWN_COMMAND. */
    if ((r = attach_require_runtime(res, PERFMAP_MIN_MAJOR, command_name(o),
                                    "on older runtimes the perf map can only be enabled at "
                                    "startup: restart the app with DOTNET_PerfMapEnabled=1 "
                                    "(docs/perfmap.md)")) < 0)
        return r;
    uint8_t req[IPC_HEADER_SIZE + 4];
    int n = o->enable ? ipc_encode_enable_perfmap(o->type, req, sizeof(req), e)
                      : ipc_encode_disable_perfmap(req, sizeof(req), e);
    if (n < 0)
        return attach_fail(res, ATTACH_USAGE, n);
    /* The pid must still be the process we inspected: never ask its successor. */
    if ((r = target_check_alive(t, e)) < 0)
        return attach_fail(res, ATTACH_NOT_FOUND, r);
    uint32_t hr = 0;
    r = ipc_conn_status_command(c.sockfd, &c.peer, req, (size_t)n, util_now_ms() + o->timeout_ms,
                                &hr, e);
    if (r < 0)
        return attach_fail(res, r == -EACCES ? ATTACH_PERMISSION : ATTACH_PROTOCOL, r);
    return attempt_stage(o->on_stage, o->userdata, ATTACH_STAGE_REPLIED, res,
                         settle_answer(o, t, hr, res));
}

int perfmap_run(const struct perfmap_opts *o, struct target *t, struct attach_result *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->pid = t->pid;
    ret->kind = o->enable ? ATTACH_KIND_PERFMAP_ENABLE : ATTACH_KIND_PERFMAP_DISABLE;
    ret->perfmap_type = o->enable ? o->type : 0;
    ret->perfmap_size = -1;
    struct creds_saved cs = {0};
    int64_t start = util_now_ms();
    int r = run(o, t, &cs, ret);
    creds_restore(&cs);
    ret->duration_ms = util_now_ms() - start;
    if (r >= 0)
        err_clear(&ret->error);
    return r;
}
