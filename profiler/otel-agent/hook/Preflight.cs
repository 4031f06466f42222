// clrattach's OpenTelemetry agent: what refuses a start before the core is loaded (docs/otel.md).
//
// Each check answers null (go on) or the reason, in words with the next step: the app already runs
// an OpenTelemetry SDK of its own (an `OpenTelemetry` assembly in the default load context; two
// SDKs would export every span twice) unless CLRATTACH_OTEL_FORCE=1; the runtime's
// System.Diagnostics.DiagnosticSource is older than the one the agent's assemblies reference (read
// from their metadata, nothing loaded), named with the .NET version that has it; no OTLP
// endpoint, or one that is not an http(s) URL.
using System;
using System.Diagnostics;
using System.IO;
using System.Reflection;
using System.Reflection.Metadata;
using System.Reflection.PortableExecutable;
using System.Runtime.InteropServices;
using System.Runtime.Loader;

namespace ClrattachOtel
{
    internal static class Preflight
    {
        private const string DiagnosticSource = "System.Diagnostics.DiagnosticSource";

        internal static string? OwnSdk()
        {
            if (Environment.GetEnvironmentVariable("CLRATTACH_OTEL_FORCE") == "1")
                return null;
            foreach (Assembly a in AssemblyLoadContext.Default.Assemblies)
            {
                AssemblyName n = a.GetName();
                if (n.Name == "OpenTelemetry")
                    return $"the app runs an OpenTelemetry SDK of its own (OpenTelemetry {n.Version} is loaded " +
                           "in its default load context): a second SDK would export every span twice; " +
                           "configure the app's own SDK, or set CLRATTACH_OTEL_FORCE=1 to start anyway";
            }
            return null;
        }

        // The highest DiagnosticSource any of the agent's assemblies references, against the one
        // the app's runtime has.
        internal static string? RuntimeTooOld(string dir)
        {
            Version have = typeof(Activity).Assembly.GetName().Version ?? new Version(0, 0);
            Version need = new Version(0, 0);
            string needBy = "";
            foreach (string f in Directory.GetFiles(dir, "*.dll"))
            {
                Version? v = ReferencedVersion(f, DiagnosticSource);
                if (v != null && v > need)
                {
                    need = v;
                    needBy = Path.GetFileNameWithoutExtension(f);
                }
            }
            if (need <= have)
                return null;
            return $"{needBy} needs {DiagnosticSource} {need} (.NET {need.Major} or newer); this app runs " +
                   $"{RuntimeInformation.FrameworkDescription}, whose {DiagnosticSource} is {have}: " +
                   $"the agent needs a .NET {need.Major} runtime";
        }

        private static Version? ReferencedVersion(string file, string name)
        {
            try
            {
                using var fs = File.OpenRead(file);
                using var pe = new PEReader(fs);
                if (!pe.HasMetadata)
                    return null;
                MetadataReader md = pe.GetMetadataReader();
                foreach (AssemblyReferenceHandle h in md.AssemblyReferences)
                {
                    AssemblyReference r = md.GetAssemblyReference(h);
                    if (md.StringComparer.Equals(r.Name, name))
                        return r.Version;
                }
            }
            catch (Exception)
            {
                // Not an assembly (or unreadable): it references nothing.
            }
            return null;
        }

        internal static string? Endpoint()
        {
            string[] vars = { "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                              "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT" };
            bool any = false;
            foreach (string v in vars)
            {
                string? s = Environment.GetEnvironmentVariable(v);
                if (string.IsNullOrWhiteSpace(s))
                    continue;
                any = true;
                if (!Uri.TryCreate(s.Trim(), UriKind.Absolute, out Uri? u) ||
                    (u.Scheme != Uri.UriSchemeHttp && u.Scheme != Uri.UriSchemeHttps))
                    return $"{v}={s}: not an http:// or https:// URL (e.g. http://collector:4318)";
            }
            return any ? null
                       : "no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT in the app's environment " +
                         "(e.g. http://collector:4318 for http/protobuf, :4317 for grpc)";
        }

        // ASP.NET Core is in the app's framework (its trusted platform assemblies).
        internal static bool HasAspNetCore()
        {
            return AppContext.GetData("TRUSTED_PLATFORM_ASSEMBLIES") is string tpa &&
                   tpa.Contains("Microsoft.AspNetCore.Http.Abstractions.dll", StringComparison.Ordinal);
        }
    }
}
