// Bench.cs: replays an aoi-bench --dump-ops crowd through the binding and
// times each tick's frame as aoi-bench does: the operations (Add, MoveMany
// of each run of moves, Remove), Tick, and the delivery of every segment,
// each on a thread of its own (the host's and one more a segment, as
// aoi-bench delivers), with a handler that folds every event into
// aoi-bench's checksum (a sum a segment, added up). The operations
// are loaded before the first tick. Usage:
//   mono Bench.exe OPS_FILE MEASURED_TICKS THREADS
// prints "frame_ms_median X checksum HEX events_per_tick N gen0 N", then
// the medians of the frame's three parts (submit, tick, deliver); the
// median is over the last MEASURED_TICKS ticks (the ones before are
// aoi-bench's warm-up), the checksum over every tick.
using System;
using System.Diagnostics;
using System.Globalization;
using System.Threading;
using Aoi;

// One segment's share of the checksum; its handler is made once, so a
// delivery allocates nothing.
sealed class SegmentSink
{
    public ulong Sum;
    public long Events;
    public readonly DeliveryHandler Handler;

    public SegmentSink() { Handler = Add; }

    void Add(ulong watcher, ulong tag, ReadOnlySpan<Event> events)
    {
        unchecked {
            Sum += Checksum.HashOutbox(Checksum.Seed, watcher, events);
        }
        Events += events.Length;
    }
}

// Delivers segment `segment` of `world` each time the host's barrier
// lets it, until told to stop.
sealed class SegmentThread
{
    readonly World world;
    readonly int segment;
    readonly SegmentSink sink;
    readonly Barrier barrier;
    public volatile bool Stop;

    public SegmentThread(World world, int segment, SegmentSink sink, Barrier barrier)
    {
        this.world = world;
        this.segment = segment;
        this.sink = sink;
        this.barrier = barrier;
    }

    public void Run()
    {
        for (;;) {
            barrier.SignalAndWait();
            if (Stop)
                return;
            world.DeliverSegment(segment, sink.Handler);
            barrier.SignalAndWait();
        }
    }
}

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
            int segments = w.Segments;
            var sinks = new SegmentSink[segments];
            for (int s = 0; s < segments; s++)
                sinks[s] = new SegmentSink();
            var barrier = new Barrier(segments);
            var workers = new SegmentThread[segments];
            var threadsRun = new Thread[segments];
            for (int s = 1; s < segments; s++) {
                workers[s] = new SegmentThread(w, s, sinks[s], barrier);
                threadsRun[s] = new Thread(workers[s].Run);
                threadsRun[s].Start();
            }
            var clock = new Stopwatch();
            for (int t = 0; t < r.Ticks; t++) {
                if (t == warmup) {
                    GC.Collect();
                    gen0 = GC.CollectionCount(0);
                    events = 0;
                    foreach (SegmentSink k in sinks)
                        events -= k.Events;
                }
                clock.Restart();
                r.Submit(w, t);
                double s1 = clock.Elapsed.TotalMilliseconds;
                w.Tick();
                double s2 = clock.Elapsed.TotalMilliseconds;
                if (segments > 1)
                    barrier.SignalAndWait(); /* the others start */
                w.DeliverSegment(0, sinks[0].Handler);
                if (segments > 1)
                    barrier.SignalAndWait(); /* and are done */
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
            foreach (SegmentSink k in sinks)
                events += k.Events;
            for (int s = 1; s < segments; s++)
                workers[s].Stop = true;
            if (segments > 1)
                barrier.SignalAndWait();
            for (int s = 1; s < segments; s++)
                threadsRun[s].Join();
            ulong sum = Checksum.Seed;
            foreach (SegmentSink k in sinks)
                unchecked { sum += k.Sum; }
            Checksum.Sum = sum;
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
