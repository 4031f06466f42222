/* SPDX-License-Identifier: Apache-2.0 */
/* The table of profilers known to do nothing on attach, and the lookup of a library's name and
 * CLSID in it. Pure: no I/O. */
#include "profset/vendors.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"

/*
 * Each row read in the vendor's source (docs/bundles.md has the same table with links). A row is
 * added only when the CLSID, the library name and InitializeForAttach were all read in the
 * vendor's own code or build files; a vendor whose code could not be read stays out.
 */
/*
 * OpenTelemetry's managed half starts only when the runtime's environment says this very
 * profiler was loaded: CORECLR_ENABLE_PROFILING=1, its CLSID in CORECLR_PROFILER ("The CLR
 * Profiler is disabled", "a different profiler ID"), and a path its P/Invokes load the native
 * library from (NativeMethods.cs: CORECLR_PROFILER_PATH_64, or when that is blank,
 * CORECLR_PROFILER_PATH); both halves find their files under OTEL_DOTNET_AUTO_HOME. {entry} is
 * the real library, never the env loader, which exports none of its functions.
 *
 * Set before the resume, the three would also have the runtime load the real library itself, as
 * its environment's startup profiler, before the one StartupProfiler stored (the env loader), so
 * that the variables would never reach its getenv(). The runtime reads CORECLR_PROFILER_PATH_64
 * first and takes a blank one as the path, which fails to load (an event, nothing else), and
 * then loads the env loader; OpenTelemetry skips a blank one and reads CORECLR_PROFILER_PATH.
 */
static const char *const otel_startup_env[] = {
    "CORECLR_ENABLE_PROFILING=1",    "CORECLR_PROFILER={918728DD-259F-4A6A-AC2B-B85E1B658318}",
    "CORECLR_PROFILER_PATH={entry}", "CORECLR_PROFILER_PATH_64= ",
    "OTEL_DOTNET_AUTO_HOME={dir}",   NULL,
};

const struct vendor_noop vendors_noop[] = {
    {
        .vendor = "OpenTelemetry .NET automatic instrumentation",
        .entry = "OpenTelemetry.AutoInstrumentation.Native.so",
        .clsid = "{918728DD-259F-4A6A-AC2B-B85E1B658318}",
        .on_attach = "InitializeForAttach is not overridden; the base class returns S_OK",
        .startup = "CORECLR_ENABLE_PROFILING=1, CORECLR_PROFILER={918728DD-259F-4A6A-AC2B-"
                   "B85E1B658318}, CORECLR_PROFILER_PATH and OTEL_DOTNET_AUTO_HOME",
        .source = "open-telemetry/opentelemetry-dotnet-instrumentation "
                  "src/OpenTelemetry.AutoInstrumentation.Native/cor_profiler_base.cpp@1660229",
        .startup_env = otel_startup_env,
        .startup_env_source = "open-telemetry/opentelemetry-dotnet-instrumentation "
                              "src/OpenTelemetry.AutoInstrumentation.StartupHook/RulesEngine/"
                              "NativeProfilerDiagnosticsRule.cs@4fa5574 (CORECLR_ENABLE_PROFILING, "
                              "CORECLR_PROFILER), src/OpenTelemetry.AutoInstrumentation/"
                              "NativeMethods.cs (CORECLR_PROFILER_PATH_64, then "
                              "CORECLR_PROFILER_PATH), docs/config.md (OTEL_DOTNET_AUTO_HOME)",
    },
    {
        .vendor = "Datadog .NET tracer (native loader)",
        .entry = "Datadog.Trace.ClrProfiler.Native.so",
        .clsid = "{846F5F1C-F9AE-4B07-969E-05C26BC060D8}",
        .on_attach = "InitializeForAttach forwards to child profilers that only Initialize "
                     "creates: none is called, S_OK",
        .startup = "CORECLR_ENABLE_PROFILING=1, CORECLR_PROFILER={846F5F1C-F9AE-4B07-969E-"
                   "05C26BC060D8}, CORECLR_PROFILER_PATH and DD_DOTNET_TRACER_HOME",
        .source = "DataDog/dd-trace-dotnet "
                  "shared/src/Datadog.Trace.ClrProfiler.Native/cor_profiler.cpp@000e499",
    },
    {
        .vendor = "Datadog .NET continuous profiler",
        .entry = "Datadog.Profiler.Native.so",
        .clsid = "{BD1A650D-AC5D-4896-B64F-D6FA25D6B26A}",
        .on_attach = "InitializeForAttach returns S_OK and does nothing",
        .startup = "CORECLR_ENABLE_PROFILING=1, CORECLR_PROFILER={BD1A650D-AC5D-4896-B64F-"
                   "D6FA25D6B26A}, CORECLR_PROFILER_PATH and DD_PROFILING_ENABLED=1",
        .source = "DataDog/dd-trace-dotnet "
                  "profiler/src/ProfilerEngine/Datadog.Profiler.Native/CorProfilerCallback.cpp"
                  "@0046b67",
    },
    {
        .vendor = "Grafana Pyroscope .NET profiler",
        .entry = "Pyroscope.Profiler.Native.so",
        .clsid = "{BD1A650D-AC5D-4896-B64F-D6FA25D6B26A}",
        .on_attach = "InitializeForAttach returns S_OK and does nothing",
        .startup = "CORECLR_ENABLE_PROFILING=1, CORECLR_PROFILER={BD1A650D-AC5D-4896-B64F-"
                   "D6FA25D6B26A}, CORECLR_PROFILER_PATH and LD_PRELOAD of "
                   "Pyroscope.Linux.ApiWrapper.x64.so",
        .source = "grafana/pyroscope-dotnet "
                  "profiler/src/ProfilerEngine/Datadog.Profiler.Native/CorProfilerCallback.cpp"
                  "@054057c",
    },
};
const size_t vendors_noop_count = ARRAY_SIZE(vendors_noop);

const struct vendor_noop *vendors_find_noop(const struct vendor_noop *table, size_t n,
                                            const char *entry_name, const char *clsid)
{
    if (!entry_name || !clsid)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].entry, entry_name) == 0 && strcasecmp(table[i].clsid, clsid) == 0)
            return &table[i];
    return NULL;
}

/* The NAME of "NAME=VALUE": its length. */
static size_t name_len(const char *nv)
{
    const char *eq = strchr(nv, '=');
    return eq ? (size_t)(eq - nv) : strlen(nv);
}

int vendors_startup_env(const struct vendor_noop *row, const char *const *user, size_t n_user,
                        const char **out, size_t max, char *added, size_t size)
{
    size_t n = 0, used = 0;
    if (size)
        added[0] = '\0';
    for (size_t i = 0; i < n_user; i++) {
        if (n == max)
            return -E2BIG;
        out[n++] = user[i];
    }
    for (const char *const *v = row && row->startup_env ? row->startup_env : NULL; v && *v; v++) {
        size_t nl = name_len(*v);
        bool given = false;
        for (size_t i = 0; i < n_user && !given; i++)
            given = name_len(user[i]) == nl && strncmp(user[i], *v, nl) == 0;
        if (given)
            continue;
        if (n == max)
            return -E2BIG;
        out[n++] = *v;
        int w = snprintf(added + used, size - used, "%s%.*s", used ? ", " : "", (int)nl, *v);
        if (w > 0 && (size_t)w < size - used)
            used += (size_t)w;
    }
    return (int)n;
}
