// Bench.cs: replays an aoi-bench --dump-ops crowd through the binding and
// times each tick's frame as aoi-bench does: the operations (Add, MoveMany
// of each run of moves, Remove), Tick, and Deliver of every segment with a
// handler that folds every event into aoi-bench's checksum. The operations
// are loaded before the first tick. Usage:
//   mono Bench.exe OPS_FILE MEASURED_TICKS THREADS
// prints "frame_ms_median X checksum HEX events_per_tick N gen0 N", then
// the medians of the frame's three parts (submit, tick, deliver); the
// median is over the last MEASURED_TICKS ticks (the ones before are
// aoi-bench's warm-up), the checksum over every tick.
using System;
using System.Diagnostics;
using System.Globalization;
using Aoi;

static class Bench
{
    static int Main(string[] args)
    {
        if (args.Length != 3) {
            Console.Error.WriteLine("usage: Bench.exe OPS_FILE MEASURED_TICKS THREADS");
            return 2;
        }
        Replay r = Replay.Load(args[0]);
        int measured = int.Parse(args[1]);
        uint threads = uint.Parse(args[2]);
        int warmup = (int)r.Ticks - measured;
        if (measured <= 0 || warmup < 0) {
            Console.Error.WriteLine("Bench: MEASURED_TICKS out of range");
            return 2;
        }
        var frames = new double[measured];
        var submits = new double[measured];
        var ticks = new double[measured];
        var delivers = new double[measured];
        long events = 0;
        int gen0 = 0;
        using (var w = new World(r.Config(threads))) {
            DeliveryHandler h = Checksum.Handler;
            Checksum.Sum = Checksum.Seed;
            var clock = new Stopwatch();
            for (int t = 0; t < r.Ticks; t++) {
                if (t == warmup) {
                    GC.Collect();
                    gen0 = GC.CollectionCount(0);
                    events = Checksum.Events;
                }
                clock.Restart();
                r.Submit(w, t);
                double s1 = clock.Elapsed.TotalMilliseconds;
                w.Tick();
                double s2 = clock.Elapsed.TotalMilliseconds;
                w.Deliver(h);
                clock.Stop();
                double s3 = clock.Elapsed.TotalMilliseconds;
                if (t >= warmup) {
                    frames[t - warmup] = s3;
                    submits[t - warmup] = s1;
                    ticks[t - warmup] = s2 - s1;
                    delivers[t - warmup] = s3 - s2;
                }
            }
            gen0 = GC.CollectionCount(0) - gen0;
            events = Checksum.Events - events;
        }
        Console.WriteLine(string.Format(CultureInfo.InvariantCulture,
            "frame_ms_median {0:F3} checksum {1} events_per_tick {2} gen0 {3}" +
            " submit_ms_median {4:F3} tick_ms_median {5:F3} deliver_ms_median {6:F3}",
            Median(frames), Checksum.Hex(Checksum.Sum), events / measured, gen0,
            Median(submits), Median(ticks), Median(delivers)));
        return 0;
    }

    static double Median(double[] v)
    {
        Array.Sort(v);
        int n = v.Length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
}
