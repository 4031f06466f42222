// clrattach's OpenTelemetry agent: its settings, read from the app's environment
// (docs/otel.md#settings), and the libraries the app has.
//
// clrattach sends the settings with the diagnostic IPC's SetEnvironmentVariable before it applies
// the hook; managed code reads them with Environment.GetEnvironmentVariable. The standard
// OTEL_* names: OTEL_EXPORTER_OTLP_ENDPOINT (and the per-signal *_TRACES_ / *_METRICS_ENDPOINT,
// taken as they are), OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf, the default here, or grpc),
// OTEL_SERVICE_NAME (default: the entry assembly's name), OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER (none turns a signal off), OTEL_BSP_SCHEDULE_DELAY
// (default 1000 ms here) and OTEL_METRIC_EXPORT_INTERVAL (default 10000 ms here), both shorter
// than the SDK's own so telemetry shows within seconds of the command.
using System;
using System.IO;
using System.Reflection;

namespace ClrattachOtel
{
    internal sealed class Settings
    {
        internal string? Refusal;
        internal bool Grpc;
        internal string Endpoint = "";
        internal Uri TracesEndpoint = new Uri("http://localhost:4318");
        internal Uri MetricsEndpoint = new Uri("http://localhost:4318");
        internal string ServiceName = "";
        internal bool Traces = true;
        internal bool Metrics = true;
        internal int? BatchDelayMs;
        internal int? MetricIntervalMs;

        internal static Settings Read()
        {
            var s = new Settings();
            string protocol = (Env("OTEL_EXPORTER_OTLP_PROTOCOL") ?? "http/protobuf").ToLowerInvariant();
            if (protocol == "grpc")
                s.Grpc = true;
            else if (protocol != "http/protobuf")
                return Refuse(s, $"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: http/protobuf or grpc");
            s.Endpoint = (Env("OTEL_EXPORTER_OTLP_ENDPOINT") ?? "").TrimEnd('/');
            s.TracesEndpoint = Signal(s, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces");
            s.MetricsEndpoint = Signal(s, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "/v1/metrics");
            s.Traces = !string.Equals(Env("OTEL_TRACES_EXPORTER"), "none", StringComparison.OrdinalIgnoreCase);
            s.Metrics = !string.Equals(Env("OTEL_METRICS_EXPORTER"), "none", StringComparison.OrdinalIgnoreCase);
            s.ServiceName = Env("OTEL_SERVICE_NAME") ?? Assembly.GetEntryAssembly()?.GetName().Name ??
                            Path.GetFileNameWithoutExtension(Environment.ProcessPath) ?? "unknown_service:dotnet";
            if (Env("OTEL_BSP_SCHEDULE_DELAY") == null)
                s.BatchDelayMs = 1000;
            if (Env("OTEL_METRIC_EXPORT_INTERVAL") == null)
                s.MetricIntervalMs = 10000;
            return s;
        }

        private static Settings Refuse(Settings s, string why)
        {
            s.Refusal = why;
            return s;
        }

        // The signal's own variable as it is; else the endpoint, with the signal's path for
        // http/protobuf (as the SDK does for the variable, not for a URL set in code).
        private static Uri Signal(Settings s, string name, string path)
        {
            string? own = Env(name);
            if (own != null)
                return new Uri(own);
            return new Uri(s.Grpc ? s.Endpoint : s.Endpoint + path);
        }

        private static string? Env(string name)
        {
            string? v = Environment.GetEnvironmentVariable(name);
            return string.IsNullOrWhiteSpace(v) ? null : v.Trim();
        }
    }

    // The libraries an instrumentation is for, in the app's trusted platform assemblies (its
    // framework and its own dependencies): an instrumentation is only turned on, and named in the
    // status, where its library is there.
    internal static class Libraries
    {
        private static readonly string s_tpa = AppContext.GetData("TRUSTED_PLATFORM_ASSEMBLIES") as string ?? "";

        internal static bool AspNetCore => Has("Microsoft.AspNetCore.Http.Abstractions");
        internal static bool SqlClient => Has("Microsoft.Data.SqlClient") || Has("System.Data.SqlClient");
        internal static bool EntityFrameworkCore => Has("Microsoft.EntityFrameworkCore");
        internal static bool GrpcClient => Has("Grpc.Net.Client");

        private static bool Has(string name)
        {
            return s_tpa.Contains(Path.DirectorySeparatorChar + name + ".dll", StringComparison.Ordinal);
        }
    }
}
