// The command line both test apps of tests/e2e/test_otel_agent.sh take (tests/otel-apps/*):
// nothing, or --seconds N (how long they run; default 120). Anything else is a usage error.
using System;

internal static class Args
{
    internal static int Seconds(string[] args, string app)
    {
        if (args.Length == 0)
            return 120;
        if (args.Length == 2 && args[0] == "--seconds" && int.TryParse(args[1], out int s) && s >= 0)
            return s;
        Console.Error.WriteLine($"usage: {app} [--seconds N]");
        return -1;
    }
}
