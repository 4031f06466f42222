// clrattach's OpenTelemetry agent: the core, run by the hook in its own AssemblyLoadContext
// (docs/otel.md).
//
// Start builds a TracerProvider (ASP.NET Core server spans where the app has ASP.NET Core,
// HttpClient client spans, and SqlClient, Entity Framework Core and gRPC client spans where the
// app has those libraries) and a MeterProvider (runtime, process, HTTP client and server), both
// exporting OTLP to the endpoint the settings name (Settings.cs), and answers what it started as a
// dictionary of framework types, which the hook writes to the status file. Stop flushes and
// shuts both down within 3 s, then disposes them: telemetry stops, and a later Start builds them
// anew.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Reflection;
using OpenTelemetry;
using OpenTelemetry.Exporter;
using OpenTelemetry.Metrics;
using OpenTelemetry.Resources;
using OpenTelemetry.Trace;

namespace ClrattachOtel
{
    public static class Agent
    {
        private const int StopBudgetMs = 3000;
        private static TracerProvider? s_tracer;
        private static MeterProvider? s_meter;

        public static Dictionary<string, object?> Start(string agentDir, string agentVersion)
        {
            Settings s = Settings.Read();
            if (s.Refusal != null)
                return new Dictionary<string, object?> { ["refused"] = s.Refusal };
            ResourceBuilder resource = Resource(s, agentVersion);
            var traced = new List<string>();
            var measured = new List<string>();
            if (s.Traces)
                s_tracer = BuildTracer(s, resource, traced);
            if (s.Metrics)
                s_meter = BuildMeter(s, resource, measured);
            var names = new List<string>(traced);
            foreach (string m in measured)
                if (!names.Contains(m))
                    names.Add(m);
            return new Dictionary<string, object?>
            {
                ["instrumentations"] = names.ToArray(),
                ["traces"] = s.Traces ? traced.ToArray() : null,
                ["metrics"] = s.Metrics ? measured.ToArray() : null,
                ["exporter"] = "otlp",
                ["protocol"] = s.Grpc ? "grpc" : "http/protobuf",
                ["endpoint"] = s.Endpoint,
                ["traces_endpoint"] = s.Traces ? s.TracesEndpoint.ToString() : null,
                ["metrics_endpoint"] = s.Metrics ? s.MetricsEndpoint.ToString() : null,
                ["service_name"] = s.ServiceName,
                ["agent_dir"] = agentDir,
                ["versions"] = new Dictionary<string, object?>
                {
                    ["opentelemetry"] = Informational(typeof(Sdk).Assembly),
                    ["otlp_exporter"] = Informational(typeof(OtlpExporterOptions).Assembly),
                },
            };
        }

        // Both providers flushed and shut down within one budget (a collector that takes the
        // connection and never answers must not hold the stop), then disposed.
        public static Dictionary<string, object?> Stop()
        {
            var sw = Stopwatch.StartNew();
            int Left() => Math.Max(0, StopBudgetMs - (int)sw.ElapsedMilliseconds);
            bool flushed = true;
            if (s_tracer != null)
            {
                flushed &= s_tracer.Shutdown(Left());
                s_tracer.Dispose();
                s_tracer = null;
            }
            if (s_meter != null)
            {
                flushed &= s_meter.Shutdown(Left());
                s_meter.Dispose();
                s_meter = null;
            }
            return new Dictionary<string, object?> { ["flushed"] = flushed, ["stop_ms"] = sw.ElapsedMilliseconds };
        }

        private static ResourceBuilder Resource(Settings s, string agentVersion)
        {
            // The environment detector reads OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME, which
            // win over the defaults before it.
            return ResourceBuilder.CreateEmpty()
                .AddService(s.ServiceName, autoGenerateServiceInstanceId: true)
                .AddTelemetrySdk()
                .AddAttributes(new KeyValuePair<string, object>[]
                {
                    new("telemetry.distro.name", "clrattach-otel-agent"),
                    new("telemetry.distro.version", agentVersion),
                    new("process.pid", (long)Environment.ProcessId),
                })
                .AddEnvironmentVariableDetector();
        }

        private static TracerProvider BuildTracer(Settings s, ResourceBuilder resource, List<string> names)
        {
            TracerProviderBuilder b = Sdk.CreateTracerProviderBuilder().SetResourceBuilder(resource);
            b.AddHttpClientInstrumentation();
            names.Add("http_client");
            When(Libraries.AspNetCore, "aspnetcore", names, () => b.AddAspNetCoreInstrumentation());
            When(Libraries.SqlClient, "sqlclient", names, () => b.AddSqlClientInstrumentation());
            When(Libraries.EntityFrameworkCore, "entityframeworkcore", names,
                 () => b.AddEntityFrameworkCoreInstrumentation());
            When(Libraries.GrpcClient, "grpc_client", names, () => b.AddGrpcClientInstrumentation());
            b.AddOtlpExporter(o =>
            {
                Exporter(o, s, s.TracesEndpoint);
                if (s.BatchDelayMs is int ms)
                    o.BatchExportProcessorOptions.ScheduledDelayMilliseconds = ms;
            });
            return b.Build();
        }

        private static MeterProvider BuildMeter(Settings s, ResourceBuilder resource, List<string> names)
        {
            MeterProviderBuilder b = Sdk.CreateMeterProviderBuilder().SetResourceBuilder(resource);
            b.AddRuntimeInstrumentation();
            names.Add("runtime");
            b.AddProcessInstrumentation();
            names.Add("process");
            b.AddHttpClientInstrumentation();
            names.Add("http_client");
            When(Libraries.AspNetCore, "aspnetcore", names, () => b.AddAspNetCoreInstrumentation());
            b.AddOtlpExporter((o, reader) =>
            {
                Exporter(o, s, s.MetricsEndpoint);
                if (s.MetricIntervalMs is int ms)
                    reader.PeriodicExportingMetricReaderOptions.ExportIntervalMilliseconds = ms;
            });
            return b.Build();
        }

        // Turns an instrumentation on, and names it, where the app has its library.
        private static void When(bool has, string name, List<string> names, Action add)
        {
            if (!has)
                return;
            add();
            names.Add(name);
        }

        // What the SDK read from OTEL_EXPORTER_OTLP_* stays (headers, timeout); the protocol and
        // the signal's full URL are ours, since the SDK's own default protocol is grpc.
        private static void Exporter(OtlpExporterOptions o, Settings s, Uri endpoint)
        {
            o.Protocol = s.Grpc ? OtlpExportProtocol.Grpc : OtlpExportProtocol.HttpProtobuf;
            o.Endpoint = endpoint;
        }

        private static string Informational(Assembly a)
        {
            string v = a.GetCustomAttribute<AssemblyInformationalVersionAttribute>()?.InformationalVersion
                       ?? a.GetName().Version?.ToString() ?? "unknown";
            int plus = v.IndexOf('+');
            return plus > 0 ? v.Substring(0, plus) : v;
        }
    }
}
