// ClrTarget: a busy .NET process for clrattach's end-to-end tests.
//
// Usage: dotnet ClrTarget.dll [--seconds N]
// With CLRTARGET_MAP_DIR set, every file in that directory is mapped read-only first and stays
// mapped: the tests' stand-in for an app with many, or strange, libraries in /proc/<pid>/maps.
// Prints "ready <pid>" once the runtime is up (the tests wait for that line, then attach), then
// for N seconds (default 300) produces a steady stream of the events the sample profiler
// counts: allocations and GCs, thrown+caught exceptions, short-lived threads, new JIT work and
// dynamic assembly loads. Exits 0. Bad arguments exit 2.
// With CLRTARGET_SPIN_MS=N, each tick also burns N ms of CPU in SpinForPerfMapProbe, a method
// with a name found nowhere else: a sampling profiler (perf) of the app names it once the perf
// map does (tests/e2e/test_perfmap.sh).
using System;
using System.Diagnostics;
using System.IO;
using System.IO.MemoryMappedFiles;
using System.Reflection;
using System.Reflection.Emit;
using System.Threading;

internal static class Program
{
    private const int TickMs = 50;
    private const int GcEveryMs = 300;
    private const int ThreadEveryMs = 300;
    private const int JitEveryMs = 500;
    private const int AssemblyEveryMs = 2000;

    // Keeps the last allocation reachable until the next tick so the JIT cannot drop it.
    private static object? s_sink;
    private static long s_counter;
    // The mappings of CLRTARGET_MAP_DIR, alive as long as the process.
    private static readonly System.Collections.Generic.List<MemoryMappedViewAccessor> s_maps = new();

    private static int Main(string[] args)
    {
        int seconds = 300;
        for (int i = 0; i < args.Length; i++)
        {
            if (args[i] == "--seconds" && i + 1 < args.Length &&
                int.TryParse(args[i + 1], out int s) && s >= 0)
            {
                seconds = s;
                i++;
            }
            else
            {
                Console.Error.WriteLine("usage: ClrTarget [--seconds N]");
                return 2;
            }
        }

        string? mapDir = Environment.GetEnvironmentVariable("CLRTARGET_MAP_DIR");
        if (!string.IsNullOrEmpty(mapDir))
        {
            foreach (string f in Directory.GetFiles(mapDir))
            {
                var mmf = MemoryMappedFile.CreateFromFile(f, FileMode.Open, null, 0,
                                                          MemoryMappedFileAccess.Read);
                s_maps.Add(mmf.CreateViewAccessor(0, 0, MemoryMappedFileAccess.Read));
            }
        }

        int spinMs = 0;
        if (int.TryParse(Environment.GetEnvironmentVariable("CLRTARGET_SPIN_MS"), out int sp) &&
            sp > 0)
            spinMs = sp;

        // The tests read this line through a pipe: flush so it is not stuck in a buffer.
        Console.Out.WriteLine($"ready {Environment.ProcessId}");
        Console.Out.Flush();

        var clock = Stopwatch.StartNew();
        long nextGc = GcEveryMs, nextThread = ThreadEveryMs, nextJit = JitEveryMs;
        long nextAssembly = AssemblyEveryMs;
        int round = 0;
        while (clock.ElapsedMilliseconds < seconds * 1000L)
        {
            Allocate();
            ThrowAndCatch();
            if (spinMs > 0)
                SpinForPerfMapProbe(spinMs);
            long now = clock.ElapsedMilliseconds;
            if (now >= nextGc)
            {
                GC.Collect();
                nextGc = now + GcEveryMs;
            }
            if (now >= nextThread)
            {
                var t = new Thread(() => Interlocked.Increment(ref s_counter));
                t.Start();
                t.Join();
                nextThread = now + ThreadEveryMs;
            }
            if (now >= nextJit)
            {
                CompileSomethingNew(round++);
                nextJit = now + JitEveryMs;
            }
            if (now >= nextAssembly)
            {
                LoadDynamicAssembly(round);
                nextAssembly = now + AssemblyEveryMs;
            }
            Thread.Sleep(TickMs);
        }
        return 0;
    }

    // Not inlined: its own frame, and its own line in the perf map, is the point.
    [System.Runtime.CompilerServices.MethodImpl(
        System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static void SpinForPerfMapProbe(int ms)
    {
        var sw = Stopwatch.StartNew();
        long x = 0;
        while (sw.ElapsedMilliseconds < ms)
            for (int i = 0; i < 10000; i++)
                x = x * 31 + i;
        Interlocked.Add(ref s_counter, x & 1);
    }

    private static void Allocate()
    {
        var list = new System.Collections.Generic.List<byte[]>();
        for (int i = 0; i < 64; i++)
            list.Add(new byte[1024 + i]);
        s_sink = list;
    }

    private static void ThrowAndCatch()
    {
        try
        {
            throw new InvalidOperationException("clrtarget: expected exception");
        }
        catch (InvalidOperationException)
        {
            Interlocked.Increment(ref s_counter);
        }
    }

    // A DynamicMethod is new code every time, so each call gives the JIT fresh work. A generic
    // instantiation over a new array rank/element combination adds class loads as well.
    private static void CompileSomethingNew(int round)
    {
        var dm = new DynamicMethod($"Add{round}", typeof(int), new[] { typeof(int) },
                                   typeof(Program).Module);
        ILGenerator il = dm.GetILGenerator();
        il.Emit(OpCodes.Ldarg_0);
        il.Emit(OpCodes.Ldc_I4, round);
        il.Emit(OpCodes.Add);
        il.Emit(OpCodes.Ret);
        var f = (Func<int, int>)dm.CreateDelegate(typeof(Func<int, int>));
        s_counter += f(1);

        Type elem = (round % 4) switch
        {
            0 => typeof(int),
            1 => typeof(long),
            2 => typeof(string),
            _ => typeof(Guid),
        };
        Type arr = elem;
        for (int r = 0; r <= round % 8; r++)
            arr = arr.MakeArrayType();
        Type closed = typeof(Box<>).MakeGenericType(arr);
        s_sink = Activator.CreateInstance(closed);
    }

    // A collectible dynamic assembly with one type: produces assembly and module load events
    // (and their unloads later) without growing the process for the whole run.
    private static void LoadDynamicAssembly(int round)
    {
        var name = new AssemblyName($"ClrTargetDyn{round}");
        AssemblyBuilder ab = AssemblyBuilder.DefineDynamicAssembly(name,
                                                                   AssemblyBuilderAccess.RunAndCollect);
        ModuleBuilder mb = ab.DefineDynamicModule(name.Name!);
        TypeBuilder tb = mb.DefineType("Dyn", TypeAttributes.Public | TypeAttributes.Class);
        MethodBuilder m = tb.DefineMethod("Get", MethodAttributes.Public | MethodAttributes.Static,
                                          typeof(int), Type.EmptyTypes);
        ILGenerator il = m.GetILGenerator();
        il.Emit(OpCodes.Ldc_I4, round);
        il.Emit(OpCodes.Ret);
        Type t = tb.CreateType();
        object? v = t.GetMethod("Get")!.Invoke(null, null);
        s_counter += v is int i ? i : 0;
    }

    private sealed class Box<T>
    {
        public T? Value { get; set; }
        public override string ToString() => $"{typeof(T).Name}:{Value}";
    }
}
