// clrattach's OpenTelemetry agent: the startup hook (docs/otel.md).
//
// `clrattach startup-hook` (and `clrattach otel` on top of it) delivers the agent's directory into
// the app's view and sends ApplyStartupHook; the runtime calls StartupHook.Initialize() on its
// diagnostics server thread and answers the IPC request only once it returns. Initialize reads
// CLRATTACH_OTEL_ACTION ("start", the default, or "stop"), checks what would make a start wrong
// (the agent already runs here, the app runs an OpenTelemetry SDK of its own, the runtime is older
// than the SDK needs, no endpoint), loads the core into an AssemblyLoadContext of its own
// (AgentLoadContext.cs) and starts or stops it, then writes what happened to the status file
// (Status.cs). It references nothing outside the shared framework, so the runtime can always load
// it, and nothing it does may end the app: every path is caught.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Reflection;
using System.Threading;
using ClrattachOtel;

internal class StartupHook
{
    // Process-wide, not per assembly: another build of the agent (another assembly name) sees it.
    private const string StateKey = "clrattach.otel.agent.state";
    // How long the diagnostics thread waits for a start or stop; past that it answers and the
    // worker writes the status when it ends.
    private const int WaitMs = 5000;

    private static readonly object s_lock = new object();
    private static AgentLoadContext? s_alc;
    private static Type? s_agent;

    public static void Initialize()
    {
        var sw = Stopwatch.StartNew();
        string statusPath = "";
        try
        {
            string dir = AgentDirectory();
            // The delivered directory itself is read-only (0555) and checked whole when it is
            // reused: the default status file lies beside it.
            statusPath = Environment.GetEnvironmentVariable("CLRATTACH_OTEL_STATUS") is { Length: > 0 } p
                             ? p
                             : dir.TrimEnd('/') + ".status.json";
            Run(dir, statusPath, sw);
        }
        catch (Exception e)
        {
            Status.TryWrite(statusPath, Status.Failed("start", e, sw));
        }
    }

    private static string AgentDirectory()
    {
        return Path.GetDirectoryName(typeof(StartupHook).Assembly.Location) ?? ".";
    }

    private static void Run(string dir, string statusPath, Stopwatch sw)
    {
        string action = (Environment.GetEnvironmentVariable("CLRATTACH_OTEL_ACTION") ?? "").Trim().ToLowerInvariant();
        if (action.Length == 0)
            action = "start";
        Dictionary<string, object?> st;
        if (action == "start")
            st = Start(dir, statusPath, sw);
        else if (action == "stop")
            st = Stop(statusPath, sw);
        else
            st = Status.Refused(action, $"CLRATTACH_OTEL_ACTION={action}: the action is start or stop", sw);
        if (st.Count > 0)
            Status.TryWrite(statusPath, st);
    }

    private static Dictionary<string, object?> Start(string dir, string statusPath, Stopwatch sw)
    {
        lock (s_lock)
        {
            if (AppContext.GetData(StateKey) is string running)
                return Status.Refused("start", $"the agent already runs in this app ({running}); " +
                                                   "stop it first (CLRATTACH_OTEL_ACTION=stop)", sw);
            string? reason = Preflight.OwnSdk() ?? Preflight.RuntimeTooOld(dir) ?? Preflight.Endpoint();
            if (reason != null)
                return Status.Refused("start", reason, sw);

            Dictionary<string, object?>? result = RunBounded(() => CallCore(dir, "Start"), statusPath, "start", sw,
                                                             ok => AppContext.SetData(StateKey, Started()));
            return result ?? new Dictionary<string, object?>();
        }
    }

    private static Dictionary<string, object?> Stop(string statusPath, Stopwatch sw)
    {
        lock (s_lock)
        {
            if (AppContext.GetData(StateKey) is not string running)
            {
                var st = Status.Make("stopped", "stop", sw);
                st["reason"] = "the agent was not running in this app";
                return st;
            }
            if (s_agent == null)
                return Status.Refused("stop", $"the agent in this app was started by another build ({running}); " +
                                                  "stop it with that build", sw);
            AppContext.SetData(StateKey, null);
            Dictionary<string, object?>? result = RunBounded(() => CallCore(AgentDirectory(), "Stop"), statusPath, "stop", sw, null);
            return result ?? new Dictionary<string, object?>();
        }
    }

    private static string Started()
    {
        return $"started by {typeof(StartupHook).Assembly.GetName().Name} " +
               $"{Status.AgentVersion()} at {DateTime.UtcNow:yyyy-MM-ddTHH:mm:ssZ}";
    }

    // Runs the core's Start or Stop on a thread of its own and waits up to WaitMs: the
    // diagnostics thread serves one client at a time. A late end writes its own status.
    private static Dictionary<string, object?>? RunBounded(Func<Dictionary<string, object?>> work,
                                                          string statusPath, string action, Stopwatch sw,
                                                          Action<bool>? onStarted)
    {
        Dictionary<string, object?>? result = null;
        bool late = false;
        var gate = new object();
        var t = new Thread(() =>
        {
            Dictionary<string, object?> r;
            try
            {
                Dictionary<string, object?> core = work();
                r = Status.FromCore(action, core, sw);
                if (r["state"] as string == "started")
                    onStarted?.Invoke(true);
            }
            catch (Exception e)
            {
                r = Status.Failed(action, e, sw);
            }
            lock (gate)
            {
                result = r;
                if (late)
                    Status.TryWrite(statusPath, r);
                Monitor.PulseAll(gate);
            }
        });
        t.IsBackground = true;
        t.Name = "clrattach-otel-" + action;
        t.Start();
        lock (gate)
        {
            if (result == null)
                Monitor.Wait(gate, WaitMs);
            if (result != null)
                return result;
            late = true;
        }
        var st = Status.Make(action == "start" ? "starting" : "stopping", action, sw);
        st["reason"] = $"not done after {WaitMs / 1000} s; this file is rewritten when it is";
        return st;
    }

    // The core's Agent.Start(dir, version) or Agent.Stop(), by reflection: the hook knows none of
    // its types, only the dictionary (System.Private.CoreLib's) it answers with.
    private static Dictionary<string, object?> CallCore(string dir, string method)
    {
        if (s_agent == null)
        {
            s_alc ??= new AgentLoadContext(dir);
            Assembly core = s_alc.LoadFromAssemblyPath(Path.Combine(dir, "ClrattachOtelAgent.Core.dll"));
            s_agent = core.GetType("ClrattachOtel.Agent", throwOnError: true)!;
        }
        object?[] args = method == "Start" ? new object?[] { dir, Status.AgentVersion() } : Array.Empty<object?>();
        MethodInfo m = s_agent.GetMethod(method, BindingFlags.Public | BindingFlags.Static)!;
        try
        {
            return (Dictionary<string, object?>)m.Invoke(null, args)!;
        }
        catch (TargetInvocationException e) when (e.InnerException != null)
        {
            throw e.InnerException;
        }
    }
}
