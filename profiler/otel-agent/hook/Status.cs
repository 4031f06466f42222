// clrattach's OpenTelemetry agent: the status file (docs/otel.md#the-status-file).
//
// One small JSON object, replaced whole (written beside, then renamed) at every start or stop:
// state (started, stopped, refused, failed; starting or stopping while a slow one runs on),
// action, reason, instrumentations, exporter, protocol, endpoints, service name, versions, the
// app's pid and the time Initialize took. Its path is CLRATTACH_OTEL_STATUS, else <the agent's
// directory>.status.json beside it. It is written to a new file of a random name (never through a
// link planted in a shared directory) and renamed over the old. A status that cannot be written
// costs one line on the app's stderr.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Text.Json;

namespace ClrattachOtel
{
    internal static class Status
    {
        internal static Dictionary<string, object?> Make(string state, string action, Stopwatch sw)
        {
            return new Dictionary<string, object?>
            {
                ["state"] = state,
                ["action"] = action,
                ["pid"] = Environment.ProcessId,
                ["time"] = DateTime.UtcNow.ToString("yyyy-MM-ddTHH:mm:ss.fffZ"),
                ["initialize_ms"] = sw.ElapsedMilliseconds,
                ["versions"] = new Dictionary<string, object?>
                {
                    ["agent"] = AgentVersion(),
                    ["runtime"] = RuntimeInformation.FrameworkDescription,
                    ["diagnostic_source"] = typeof(Activity).Assembly.GetName().Version?.ToString(),
                },
            };
        }

        internal static Dictionary<string, object?> Refused(string action, string reason, Stopwatch sw)
        {
            var st = Make("refused", action, sw);
            st["reason"] = reason;
            return st;
        }

        internal static Dictionary<string, object?> Failed(string action, Exception e, Stopwatch sw)
        {
            var st = Make("failed", action, sw);
            st["reason"] = $"{e.GetType().FullName}: {e.Message}";
            return st;
        }

        // The core's answer: its "refused" key, or what it started or stopped; its versions join ours.
        internal static Dictionary<string, object?> FromCore(string action, Dictionary<string, object?> core, Stopwatch sw)
        {
            if (core.TryGetValue("refused", out object? why) && why is string reason)
                return Refused(action, reason, sw);
            var st = Make(action == "start" ? "started" : "stopped", action, sw);
            foreach (var kv in core)
            {
                if (kv.Key == "versions" && kv.Value is Dictionary<string, object?> v &&
                    st["versions"] is Dictionary<string, object?> mine)
                {
                    foreach (var x in v)
                        mine[x.Key] = x.Value;
                }
                else
                {
                    st[kv.Key] = kv.Value;
                }
            }
            return st;
        }

        internal static string AgentVersion()
        {
            string? v = typeof(Status).Assembly.GetCustomAttribute<AssemblyInformationalVersionAttribute>()
                            ?.InformationalVersion;
            return v ?? "unknown";
        }

        internal static void TryWrite(string path, Dictionary<string, object?> st)
        {
            try
            {
                if (path.Length == 0)
                    return;
                string tmp = path + "." + Path.GetRandomFileName() + ".tmp";
                try
                {
                    using (var fs = new FileStream(tmp, FileMode.CreateNew, FileAccess.Write))
                    using (var w = new Utf8JsonWriter(fs))
                    {
                        WriteValue(w, st);
                    }
                    File.Move(tmp, path, overwrite: true);
                }
                finally
                {
                    File.Delete(tmp);
                }
            }
            catch (Exception e)
            {
                try
                {
                    Console.Error.WriteLine($"clrattach-otel-agent: state {st["state"]}, status not written to {path}: {e.Message}");
                }
                catch (Exception)
                {
                    // Nowhere left to say it.
                }
            }
        }

        // Framework types only: strings, numbers, booleans, dictionaries and lists of them.
        private static void WriteValue(Utf8JsonWriter w, object? v)
        {
            if (v is null)
                w.WriteNullValue();
            else if (v is string s)
                w.WriteStringValue(s);
            else if (v is bool b)
                w.WriteBooleanValue(b);
            else if (v is int or long)
                w.WriteNumberValue(Convert.ToInt64(v));
            else if (v is IDictionary dict)
            {
                w.WriteStartObject();
                foreach (DictionaryEntry kv in dict)
                {
                    w.WritePropertyName(kv.Key.ToString() ?? "");
                    WriteValue(w, kv.Value);
                }
                w.WriteEndObject();
            }
            else if (v is IEnumerable list)
            {
                w.WriteStartArray();
                foreach (object? x in list)
                    WriteValue(w, x);
                w.WriteEndArray();
            }
            else
                w.WriteStringValue(v.ToString());
        }
    }
}
