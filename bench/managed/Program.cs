// ManagedAttach: attaches a profiler the way .NET tools do, through
// Microsoft.Diagnostics.NETCore.Client's DiagnosticsClient.AttachProfiler.
//
// Usage: dotnet ManagedAttach.dll PID CLSID PROFILER_PATH [CLIENT_DATA]
// The library finds the socket under Path.GetTempPath() (TMPDIR); for a target in another mount
// namespace bench/run.sh points TMPDIR at /proc/PID/root/tmp/. PROFILER_PATH is as the target
// sees it and must already be there: the library copies nothing. Exits 0 on S_OK, 1 otherwise.
using System;
using System.Text;
using Microsoft.Diagnostics.NETCore.Client;

internal static class Program
{
    private static int Main(string[] args)
    {
        if (args.Length < 3 || !int.TryParse(args[0], out int pid) ||
            !Guid.TryParse(args[1], out Guid clsid))
        {
            Console.Error.WriteLine("usage: ManagedAttach PID CLSID PROFILER_PATH [CLIENT_DATA]");
            return 2;
        }
        // clrattach sends the client data without a trailing NUL; so does this.
        byte[] data = args.Length > 3 ? Encoding.UTF8.GetBytes(args[3]) : Array.Empty<byte>();
        try
        {
            var client = new DiagnosticsClient(pid);
            client.AttachProfiler(TimeSpan.FromSeconds(5), clsid, args[2], data);
            Console.WriteLine("attached");
            return 0;
        }
        catch (Exception e)
        {
            Console.Error.WriteLine($"ManagedAttach: {e.GetType().Name}: {e.Message}");
            return 1;
        }
    }
}
