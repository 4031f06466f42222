// A startup hook for clrattach's end-to-end tests. The runtime looks for a type named
// StartupHook in no namespace and calls its static, parameterless Initialize().
// It writes /tmp/clrattach-startup-hook in the app's view: the app's pid as the app sees it, the
// directory the hook was loaded from, and the first line of hook.cfg beside it ("none" when the
// hook came alone), which proves the files of a delivered directory are found next to it, and
// CLRATTACH_HOOK_ENV from the runtime's environment ("none" when unset: startup-hook --env sets
// it before the hook runs).
using System;
using System.IO;

internal class StartupHook
{
    public static void Initialize()
    {
        string dir = Path.GetDirectoryName(typeof(StartupHook).Assembly.Location) ?? "?";
        string cfg = Path.Combine(dir, "hook.cfg");
        string extra = File.Exists(cfg) ? File.ReadAllLines(cfg)[0] : "none";
        string env = Environment.GetEnvironmentVariable("CLRATTACH_HOOK_ENV") ?? "none";
        File.WriteAllText("/tmp/clrattach-startup-hook",
                          $"pid {Environment.ProcessId} dir {dir} cfg {extra} env {env}\n");
    }
}
