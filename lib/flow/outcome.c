/* SPDX-License-Identifier: Apache-2.0 */
/* The outcome table (names, exit codes), the names of where a RID came from, and the helpers
 * that set an outcome, an answer or a version refusal in a result. Pure: no I/O. */
#include "flow/outcome.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/util.h"
#include "profset/target_rid.h"
#include "runtime/hresult.h"

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
    /* Refused as a known vendor's component is refused on attach, --force sending it. */
    [ATTACH_HOOK_START_ONLY] = {"start_only_hook", 14},
    [ATTACH_OTEL_STARTED] = {"otel_started", 0},
    [ATTACH_OTEL_STOPPED] = {"otel_stopped", 0},
    /* The runtime ran the hook; what it was to start did not: as load_failed. */
    [ATTACH_OTEL_FAILED] = {"otel_failed", 7},
    /* Refused before anything is sent, --force sending anyway: as start_only_hook. */
    [ATTACH_OTEL_SDK_PRESENT] = {"otel_sdk_present", 14},
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
           o == ATTACH_PERFMAP_DISABLED || o == ATTACH_HOOK_APPLIED || o == ATTACH_OTEL_STARTED ||
           o == ATTACH_OTEL_STOPPED;
}

int attach_outcome_exit_code(enum attach_outcome o)
{
    return (unsigned)o < ARRAY_SIZE(outcomes) ? outcomes[o].exit_code : 1;
}

/* Maps an errno from inspecting or reaching the target to an outcome. Whatever is malformed
 * here (-EPROTO, -EINVAL from a path the target chose) is the target's data breaking a rule,
 * never the operator's usage: the operator's inputs are checked before the target is read. */
enum attach_outcome attach_outcome_of_errno(int r)
{
    switch (-r) {
    case ESRCH: return ATTACH_NOT_FOUND;
    case EACCES:
    case EPERM: return ATTACH_PERMISSION;
    case ENOMEM: return ATTACH_INTERNAL;
    default: return ATTACH_PROTOCOL;
    }
}

int attach_fail(struct attach_result *res, enum attach_outcome o, int code)
{
    res->outcome = o;
    if (res->error.code == 0)
        res->error.code = code;
    return code < 0 ? code : -EPROTO;
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

void attach_record_hresult(struct attach_result *res, uint32_t hr)
{
    res->have_hresult = true;
    res->hresult = hr;
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

const char attach_inert_note[] =
    "its InitializeForAttach is known to do nothing: expected to stay inert, and it now holds the "
    "app's only profiler slot until the app restarts (no other profiler can attach before then)";
