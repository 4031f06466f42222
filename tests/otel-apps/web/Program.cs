// OtelWeb: an ASP.NET Core app for clrattach's OpenTelemetry agent tests (tests/e2e/test_otel_agent.sh).
//
// Usage: dotnet OtelWeb.dll [--seconds N]
// Listens on 127.0.0.1 (a port of the kernel's choosing), prints "ready <pid> port <port>", and
// for N seconds (default 120) calls its own GET /work every 250 ms. /work makes an HttpClient call
// to GET /leaf before it answers, so one request is a chain of spans: the driver's client span,
// the /work server span, its client span to /leaf, the /leaf server span.
using System;
using System.Linq;
using System.Net.Http;
using System.Threading;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.Logging;

internal static class Program
{
    private static int Main(string[] args)
    {
        int seconds = Args.Seconds(args, "OtelWeb");
        if (seconds < 0)
            return 2;
        WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
        builder.Logging.SetMinimumLevel(LogLevel.Warning);
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        WebApplication app = builder.Build();
        var http = new HttpClient();
        string self = "";
        app.MapGet("/work", async () => "work " + await http.GetStringAsync(self + "/leaf"));
        app.MapGet("/leaf", () => "leaf");
        app.StartAsync().GetAwaiter().GetResult();
        self = app.Urls.First();
        string port = self.Substring(self.LastIndexOf(':') + 1);
        Console.WriteLine($"ready {Environment.ProcessId} port {port}");
        using var driver = new HttpClient();
        var deadline = DateTime.UtcNow.AddSeconds(seconds);
        for (int i = 0; DateTime.UtcNow < deadline; i++)
        {
            try
            {
                driver.GetStringAsync(self + "/work").GetAwaiter().GetResult();
            }
            catch (Exception e)
            {
                Console.WriteLine($"request {i}: {e.Message}");
            }
            Thread.Sleep(250);
        }
        app.StopAsync().GetAwaiter().GetResult();
        return 0;
    }
}
