// clrattach's OpenTelemetry agent: the AssemblyLoadContext the core runs in (docs/otel.md).
//
// The SDK, its exporter, the instrumentations and the Microsoft.Extensions.* they need load from
// the agent's own directory, so they never meet the app's own copies (another version of
// Microsoft.Extensions.Options or of OpenTelemetry in the app is no clash). Everything the app and
// the agent must share is left to the default context, that is to the app: the shared framework
// (System.*, above all System.Diagnostics.DiagnosticSource, where ActivitySource, Meter and
// DiagnosticListener live, so the agent's listeners see the app's activities) and ASP.NET Core
// (Microsoft.AspNetCore.*, and Microsoft.Extensions.Primitives, whose StringValues is in the
// signatures of HttpContext's headers), from the app's own framework. An assembly of the agent's
// that is missing from its directory is an error, never a fall-back to the app's copy.
using System;
using System.IO;
using System.Reflection;
using System.Runtime.Loader;

namespace ClrattachOtel
{
    internal sealed class AgentLoadContext : AssemblyLoadContext
    {
        private readonly string _dir;

        public AgentLoadContext(string dir) : base("clrattach-otel-agent", isCollectible: false)
        {
            _dir = dir;
        }

        protected override Assembly? Load(AssemblyName name)
        {
            string? n = name.Name;
            if (n == null || IsShared(n))
                return null; // the default context: the app's
            string path = Path.Combine(_dir, n + ".dll");
            if (File.Exists(path))
                return LoadFromAssemblyPath(path);
            // Never the default context's copy in its place: that would be the app's own version.
            throw new FileNotFoundException($"{name.FullName} is not in the agent's directory {_dir}", path);
        }

        // What the app provides and the agent must share with it.
        internal static bool IsShared(string n)
        {
            return n == "System" || n.StartsWith("System.", StringComparison.Ordinal) ||
                   n == "mscorlib" || n == "netstandard" || n == "Microsoft.CSharp" ||
                   n.StartsWith("Microsoft.Win32.", StringComparison.Ordinal) ||
                   n.StartsWith("Microsoft.VisualBasic", StringComparison.Ordinal) ||
                   n.StartsWith("Microsoft.AspNetCore.", StringComparison.Ordinal) ||
                   (n == "Microsoft.Extensions.Primitives" && Preflight.HasAspNetCore());
        }
    }
}
