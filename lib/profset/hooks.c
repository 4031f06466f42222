/* SPDX-License-Identifier: Apache-2.0 */
/* The table of process-start-only startup hooks, the lookup of an assembly name in it, and the
 * refusal's wording. Pure: no I/O. */
#include "profset/hooks.h"

#include <errno.h>
#include <strings.h>

#include "base/util.h"

/*
 * Each row read in the vendor's source: the assembly name from its project file (the name the
 * build gives the hook), what it does in a running app from its code. A hook whose code could not
 * be read stays out.
 */
const struct hook_start_only hooks_start_only[] = {
    {
        .vendor = "OpenTelemetry .NET automatic instrumentation",
        .assembly = "OpenTelemetry.AutoInstrumentation.StartupHook",
        .running = "its isolated path loads the app's entry assembly again, runs its entry point "
                   "a second time and then calls Environment.Exit",
        .source = "open-telemetry/opentelemetry-dotnet-instrumentation "
                  "src/OpenTelemetry.AutoInstrumentation.StartupHook/IsolatedSetup.cs@316233d "
                  "(AfterInitialize); the name: OpenTelemetry.AutoInstrumentation.StartupHook."
                  "csproj@458f366",
    },
};
const size_t hooks_start_only_count = ARRAY_SIZE(hooks_start_only);

const struct hook_start_only *hooks_find_start_only(const char *name)
{
    for (size_t i = 0; i < hooks_start_only_count; i++)
        if (strcasecmp(hooks_start_only[i].assembly, name) == 0)
            return &hooks_start_only[i];
    return NULL;
}

int hooks_refuse_start_only(const struct hook_start_only *h, const char *shown, struct cla_error *e)
{
    err_set(e, -EPERM,
            "%s is %s's StartupHook (%s), which is for process start only: applied to a running "
            "app, %s",
            shown, h->vendor, h->assembly, h->running);
    return err_hint(e, "load it at the app's next start (DOTNET_STARTUP_HOOKS=<its path>, or the "
                       "vendor's own setup); --force sends it anyway, and the app may end");
}
