// Shaped like OpenTelemetry's StartupHook in its isolated mode: meant for process start, it
// ends the process when its work is done (there: the app's entry point run again, then
// Environment.Exit). Here: /tmp/clrattach-otelhook written in the app's view, then exit 42.
using System;
using System.IO;

internal class StartupHook
{
    public static void Initialize()
    {
        File.WriteAllText("/tmp/clrattach-otelhook", "otelhook ran\n");
        Environment.Exit(42);
    }
}
