// A startup hook with an assembly of its own (HookLib, tests/hooklib). The runtime resolves a
// hook's references from the app's context only, so the hook resolves its own from the
// directory it was loaded from (as OpenTelemetry's does) before it touches them, then writes
// /tmp/clrattach-refhook in the app's view: "refhook " and the text HookLib gives it.
using System;
using System.IO;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.Loader;

internal class StartupHook
{
    public static void Initialize()
    {
        string dir = Path.GetDirectoryName(typeof(StartupHook).Assembly.Location) ?? "/";
        AssemblyLoadContext.Default.Resolving += (context, name) =>
        {
            string path = Path.Combine(dir, name.Name + ".dll");
            return File.Exists(path) ? context.LoadFromAssemblyPath(path) : null;
        };
        Run();
    }

    // Not inlined: HookLib is resolved when this is compiled, after the handler is in place.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Run()
    {
        File.WriteAllText("/tmp/clrattach-refhook", $"refhook {Greeting.Text}\n");
    }
}
