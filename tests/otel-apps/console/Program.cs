// OtelConsole: a console app for clrattach's OpenTelemetry agent tests (tests/e2e/test_otel_agent.sh).
//
// Usage: dotnet OtelConsole.dll [--seconds N]
// Serves HTTP on 127.0.0.1 (a port of the kernel's choosing) from a thread of its own, prints
// "ready <pid> port <port>", then for N seconds (default 120) makes one HttpClient GET of
// /ping?n=<i> to itself every 200 ms, with one HttpClient made before any agent came. With
// OTELAPP_OWN_SDK=1 it first starts an OpenTelemetry SDK of its own (a TracerProvider for its
// own ActivitySource, no exporter), as an app instrumented by its developers would.
using System;
using System.Net;
using System.Net.Http;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Text;
using System.Threading;

internal static class Program
{
    private static object? s_ownSdk;

    private static int Main(string[] args)
    {
        int seconds = Args.Seconds(args, "OtelConsole");
        if (seconds < 0)
            return 2;
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        int port = ((IPEndPoint)listener.LocalEndpoint).Port;
        new Thread(() => Serve(listener)) { IsBackground = true }.Start();
        if (Environment.GetEnvironmentVariable("OTELAPP_OWN_SDK") == "1")
            StartOwnSdk();
        using var http = new HttpClient();
        Console.WriteLine($"ready {Environment.ProcessId} port {port}");
        var deadline = DateTime.UtcNow.AddSeconds(seconds);
        for (int i = 0; DateTime.UtcNow < deadline; i++)
        {
            try
            {
                http.GetStringAsync($"http://127.0.0.1:{port}/ping?n={i}").GetAwaiter().GetResult();
            }
            catch (Exception e)
            {
                Console.WriteLine($"request {i}: {e.Message}");
            }
            Thread.Sleep(200);
        }
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void StartOwnSdk()
    {
        s_ownSdk = OpenTelemetry.Trace.TracerProviderBuilderExtensions.Build(
            OpenTelemetry.Sdk.CreateTracerProviderBuilder().AddSource("OtelConsole.Own"));
        Console.WriteLine("own OpenTelemetry SDK started");
    }

    private static void Serve(TcpListener listener)
    {
        byte[] reply = Encoding.ASCII.GetBytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        while (true)
        {
            try
            {
                using TcpClient c = listener.AcceptTcpClient();
                NetworkStream st = c.GetStream();
                var buf = new byte[8192];
                var seen = new StringBuilder();
                while (!seen.ToString().Contains("\r\n\r\n"))
                {
                    int n = st.Read(buf, 0, buf.Length);
                    if (n <= 0)
                        break;
                    seen.Append(Encoding.ASCII.GetString(buf, 0, n));
                }
                st.Write(reply, 0, reply.Length);
            }
            catch (Exception e)
            {
                Console.WriteLine($"serve: {e.Message}");
            }
        }
    }
}
