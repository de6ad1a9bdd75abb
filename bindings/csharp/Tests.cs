// Tests.cs: the binding's tests, a plain runner: prints each failure,
// then "N passed, N failed", and exits 1 on any failure. test.sh sets
// AOI_LAYOUT (layout.c's output), AOI_OPS and AOI_CHECKSUM (an aoi-bench
// --dump-ops file and the checksum its JSON printed); a test whose
// variable is unset is skipped, and says so.
using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.InteropServices;
using Aoi;

static class Tests
{
    static int passed, failed;

    static int Main()
    {
        Run("layout", Layout);
        Run("version and defaults", VersionAndDefaults);
        Run("api: add, tick, deliver, queries, stats", Api);
        Run("move many", MoveMany);
        Run("error codes", Errors);
        Run("disposed world", Disposed);
        Run("callback into its world is busy", CallbackBusy);
        Run("throwing handler", ThrowingHandler);
        Run("dispose inside a handler", DisposeInHandler);
        Run("segments delivered on two threads at once", ConcurrentSegments);
        Run("no allocation once warm", NoAllocation);
        Run("crowd checksum equals aoi-bench's", Crowd);
        Run("finalized world", Finalized);
        Console.WriteLine(passed + " passed, " + failed + " failed");
        return failed == 0 ? 0 : 1;
    }

    static void Run(string name, Action test)
    {
        try {
            test();
            passed++;
        } catch (Exception e) {
            failed++;
            Console.WriteLine("FAIL " + name + ": " + e);
        }
    }

    static void Expect(bool ok, string what)
    {
        if (!ok)
            throw new Exception("expected " + what);
    }

    static void Equal<T>(T expected, T actual, string what)
    {
        if (!EqualityComparer<T>.Default.Equals(expected, actual))
            throw new Exception(what + ": expected " + expected + ", got " + actual);
    }

    static AoiError Code(Action call)
    {
        try {
            call();
        } catch (AoiException e) {
            return e.Code;
        }
        return AoiError.None;
    }

    static unsafe void Layout()
    {
        var want = new Dictionary<string, long> {
            { "config.size", sizeof(Config) },
            { "config.pool", (long)Marshal.OffsetOf(typeof(Config), "pool") },
            { "config.threads", (long)Marshal.OffsetOf(typeof(Config), "Threads") },
            { "config.min_x", (long)Marshal.OffsetOf(typeof(Config), "MinX") },
            { "config.max_radius", (long)Marshal.OffsetOf(typeof(Config), "MaxRadius") },
            { "config.move_events", (long)Marshal.OffsetOf(typeof(Config), "MoveEvents") },
            { "config.cell_size", (long)Marshal.OffsetOf(typeof(Config), "CellSize") },
            { "config.move_bands", (long)Marshal.OffsetOf(typeof(Config), "moveBands") },
            { "config.move_band_count", (long)Marshal.OffsetOf(typeof(Config), "MoveBandCount") },
            { "config.measure_cpu", (long)Marshal.OffsetOf(typeof(Config), "MeasureCpu") },
            { "config.allocator", (long)Marshal.OffsetOf(typeof(Config), "allocator") },
            { "event.size", sizeof(Event) },
            { "event.kind", (long)Marshal.OffsetOf(typeof(Event), "Kind") },
            { "entity.size", sizeof(Entity) },
            { "entity.flags", (long)Marshal.OffsetOf(typeof(Entity), "Flags") },
            { "move_op.size", sizeof(MoveOp) },
            { "stats.size", sizeof(Stats) },
            { "stats.phase_ns", (long)Marshal.OffsetOf(typeof(Stats), "ApplyNs") },
            { "stats.shard_entities", (long)Marshal.OffsetOf(typeof(Stats), "shardEntities") },
        };
        // The x86-64 values, for a run without the C helper's output.
        var c = new Dictionary<string, long> {
            { "config.size", 152 }, { "config.pool", 8 }, { "config.threads", 16 },
            { "config.min_x", 24 }, { "config.max_radius", 40 },
            { "config.move_events", 48 }, { "config.cell_size", 56 },
            { "config.move_bands", 64 }, { "config.move_band_count", 128 },
            { "config.measure_cpu", 136 }, { "config.allocator", 144 },
            { "event.size", 32 }, { "event.kind", 24 }, { "entity.size", 40 },
            { "entity.flags", 28 }, { "move_op.size", 16 }, { "stats.size", 128 },
            { "stats.phase_ns", 72 }, { "stats.shard_entities", 112 },
        };
        string path = Environment.GetEnvironmentVariable("AOI_LAYOUT");
        if (!string.IsNullOrEmpty(path)) {
            c.Clear();
            foreach (string line in File.ReadAllLines(path)) {
                string[] f = line.Split(' ');
                c[f[0]] = long.Parse(f[1]);
            }
        }
        Equal(want.Count, c.Count, "layout entries");
        foreach (var kv in c)
            Equal(kv.Value, want[kv.Key], kv.Key);
    }

    static void VersionAndDefaults()
    {
        Equal(300u, World.VersionNumber, "aoi_version");
        Equal("0.3.0", World.Version, "aoi_version_string");
        Config c = Config.Default();
        Equal(RunMode.Own, c.Run, "run");
        Equal(500f, c.MaxRadius, "max_radius");
        Equal(1000f, c.MaxX, "max_x");
        Equal(1, c.MoveEvents, "move_events");
        Equal(16u, c.RebalanceInterval, "rebalance_interval");
        Equal(0u, c.MoveBandCount, "move_band_count");
        c.SetMoveBand(7, new MoveBand(3, 4));
        Equal(3f, c.GetMoveBand(7).Distance, "band distance");
        Equal(4u, c.GetMoveBand(7).Period, "band period");
    }

    // What one delivery saw, copied out of the spans.
    sealed class Seen
    {
        public readonly List<string> Lines = new List<string>();
        public readonly DeliveryHandler Handler;

        public Seen()
        {
            Handler = (watcher, tag, events) => {
                for (int i = 0; i < events.Length; i++)
                    Lines.Add(watcher + "/" + tag + ": " + events[i].Kind + " " +
                              events[i].Id + "/" + events[i].Tag + " (" +
                              events[i].X + "," + events[i].Y + ") t" + events[i].Tick);
            };
        }

        public string Take()
        {
            string s = string.Join("; ", Lines);
            Lines.Clear();
            return s;
        }
    }

    static void Api()
    {
        Config config = Config.Default();
        config.Run = RunMode.Caller;
        using (var w = new World(config)) {
            var seen = new Seen();
            w.Add(1, 0, 0, 10, EntityFlags.Watcher, tag: 100);
            w.Add(new Entity { Id = 2, Tag = 200, X = 5, Y = 0, Radius = 0,
                               Flags = EntityFlags.Marker,
                               Layers = Entity.AllLayers, Interest = Entity.AllLayers });
            w.Tick();
            w.Deliver(seen.Handler);
            Equal("1/100: Enter 2/200 (5,0) t1", seen.Take(), "tick 1");
            var ids = new ulong[4];
            Equal(1, w.View(1, ids), "view count");
            Equal(2UL, ids[0], "view");
            Equal(1, w.WatchersOf(2, ids), "watchers_of count");
            Equal(1UL, ids[0], "watchers_of");
            Equal(1, w.QueryCircle(0, 0, 6, Entity.AllLayers, ids), "query count");
            Equal(0, w.QueryCircle(0, 0, 4, Entity.AllLayers, ids), "query miss");
            Equal(1, w.QueryCircle(0, 0, 6, Entity.AllLayers, null), "query sizing");
            Stats s = w.Stats;
            Equal(1UL, s.Tick, "stats tick");
            Equal(2UL, s.Entities, "stats entities");
            Equal(1UL, s.Watchers, "stats watchers");
            Equal(1UL, s.Events, "stats events");
            Equal(1, w.Segments, "segments");

            w.Move(2, 6, 1);
            w.SetTag(2, 201);
            w.Tick();
            w.DeliverSegment(0, seen.Handler);
            Equal("1/100: Move 2/201 (6,1) t2", seen.Take(), "tick 2");

            w.SetRadius(1, 2);
            w.Tick();
            w.Deliver(seen.Handler);
            Equal("1/100: Leave 2/201 (0,0) t3", seen.Take(), "tick 3");

            w.SetRadius(1, 10);
            w.SetLayers(2, 2, 2);
            w.SetLayers(1, 1, 1);
            w.Tick();
            w.Deliver(seen.Handler);
            Equal("", seen.Take(), "layers keep 2 out");
            w.SetLayers(1, 2, 2);
            w.SetCap(1, 1);
            w.Add(3, 1, 0, 0, EntityFlags.Marker, tag: 300, layers: 2);
            w.Tick();
            w.Deliver(seen.Handler);
            Equal("1/100: Enter 3/300 (1,0) t5", seen.Take(), "cap 1 keeps the nearest");
            w.SetCap(1, 0);
            w.SetAppeal(2, 50);
            w.SetRadius(1, 0);
            w.Remove(3);
            w.Tick();
            w.Deliver(seen.Handler);
            Equal("1/100: Leave 3/300 (0,0) t6; 1/100: Enter 2/201 (6,1) t6",
                  seen.Take(), "appeal, remove");
        }
    }

    static void MoveMany()
    {
        Config config = Config.Default();
        config.Threads = 2;
        using (var w = new World(config)) {
            for (ulong i = 0; i < 10; i++)
                w.Add(i, i, 0, 5);
            w.Tick();
            var ops = new MoveOp[12];
            for (int i = 0; i < 10; i++)
                ops[i] = new MoveOp((ulong)i, i, 1);
            w.MoveMany(ops, 10);
            w.MoveMany(ops, 0);
            ops[3].Id = 99;
            try {
                w.MoveMany(ops, 10);
                Expect(false, "MoveMany to fail");
            } catch (AoiException e) {
                Equal(AoiError.NotFound, e.Code, "code");
                Equal(3, e.Done, "done");
            }
            try {
                w.MoveMany(ops, 13);
                Expect(false, "count > ops.Length refused");
            } catch (ArgumentOutOfRangeException) {
            }
        }
    }

    static void Errors()
    {
        Config config = Config.Default();
        config.Run = RunMode.Caller;
        config.MaxRadius = 100;
        using (var w = new World(config)) {
            w.Add(1, 0, 0, 10);
            Equal(AoiError.Coordinate, Code(() => w.Move(1, float.NaN, 0)), "NaN move");
            Equal(AoiError.Coordinate, Code(() => w.Add(2, 0, float.PositiveInfinity, 1)), "inf add");
            Equal(AoiError.NotFound, Code(() => w.Move(7, 0, 0)), "unknown move");
            Equal(AoiError.NotFound, Code(() => w.Remove(7)), "unknown remove");
            Equal(AoiError.NotFound, Code(() => w.View(7, null)), "unknown view");
            Equal(AoiError.Exists, Code(() => w.Add(1, 0, 0, 10)), "duplicate add");
            Equal(AoiError.Radius, Code(() => w.Add(2, 0, 0, 101)), "radius > max");
            Equal(AoiError.Radius, Code(() => w.SetRadius(1, -1)), "negative radius");
            Equal(AoiError.Radius, Code(() => w.SetAppeal(1, float.NaN)), "NaN appeal");
            Equal(AoiError.Flags, Code(() => w.Add(2, 0, 0, 1, (EntityFlags)0)), "no flags");
            Equal(AoiError.Radius, Code(() => w.QueryCircle(0, 0, 1000, 1, null)), "query radius");
            Equal(AoiError.Invalid, Code(() => w.DeliverSegment(1, (a, b, c) => { })), "segment");
            try {
                w.Move(7, 0, 0);
            } catch (AoiException e) {
                Expect(e.Message.Contains("AOI_ENOENT"), "the C message, got " + e.Message);
            }
            // A failed call changed nothing.
            w.Tick();
            Equal(1UL, w.Stats.Entities, "entities");
        }
        Config bad = Config.Default();
        bad.Shards = 5000;
        Equal(AoiError.Invalid, Code(() => new World(bad)), "bad config");
        bad = Config.Default();
        bad.Run = RunMode.Pool; // without a pool
        Equal(AoiError.Invalid, Code(() => new World(bad)), "pool run without a pool");
    }

    static void Disposed()
    {
        var w = new World();
        w.Add(1, 0, 0, 1);
        w.Dispose();
        w.Dispose();
        Expect(w.Handle.IsClosed, "closed handle");
        int thrown = 0;
        Action[] calls = {
            () => w.Add(2, 0, 0, 1), () => w.Move(1, 0, 0), () => w.Tick(),
            () => w.Deliver((a, b, c) => { }), () => w.View(1, null),
            () => { var s = w.Stats; }, () => w.MoveMany(new MoveOp[1], 1),
            () => w.Remove(1),
        };
        foreach (Action call in calls) {
            try {
                call();
            } catch (ObjectDisposedException) {
                thrown++;
            }
        }
        Equal(calls.Length, thrown, "ObjectDisposedException");
    }

    static void CallbackBusy()
    {
        Config config = Config.Default();
        config.Run = RunMode.Caller;
        using (var w = new World(config)) {
            w.Add(1, 0, 0, 10);
            w.Add(2, 1, 0, 10);
            w.Tick();
            int calls = 0;
            try {
                w.Deliver((watcher, tag, events) => {
                    calls++;
                    w.Move(watcher, 3, 3);
                });
                Expect(false, "Deliver to throw");
            } catch (AoiException e) {
                Equal(AoiError.Busy, e.Code, "code");
            }
            Equal(2, calls, "both watchers delivered");
            w.Move(1, 3, 3); // usable again
            w.Tick();
        }
    }

    static void ThrowingHandler()
    {
        Config config = Config.Default();
        config.Threads = 2;
        config.Shards = 4;
        using (var w = new World(config)) {
            Equal(2, w.Segments, "segments");
            const int n = 40;
            for (ulong i = 0; i < n; i++)
                w.Add(i, (i % 8) * 100, (i / 8) * 100, 150);
            w.Tick();
            var got = new HashSet<ulong>();
            int events = 0;
            DeliveryHandler h = (watcher, tag, ev) => {
                got.Add(watcher);
                events += ev.Length;
                if (watcher % 3 == 0)
                    throw new InvalidOperationException("boom " + watcher);
            };
            try {
                w.Deliver(h);
                Expect(false, "Deliver to throw");
            } catch (InvalidOperationException e) {
                Expect(e.Message.StartsWith("boom "), "the handler's exception");
                Expect(e.StackTrace.Contains("ThrowingHandler"), "the original stack");
            }
            Equal(n, got.Count, "every watcher delivered");
            Equal((long)w.Stats.Events, (long)events, "every event delivered");
            // Nothing is left, and the world goes on.
            got.Clear();
            w.Deliver(h);
            Equal(0, got.Count, "outboxes empty");
            w.Move(5, 0, 0);
            w.Tick();
            events = 0;
            w.Deliver((watcher, tag, ev) => events += ev.Length);
            Equal((long)w.Stats.Events, (long)events, "next tick's events");
            Expect(events > 0, "events after the move");
        }
    }

    // Dispose from a handler: the world is destroyed once aoi_deliver
    // returns (SafeHandle's count), and the delivery finishes first.
    static void DisposeInHandler()
    {
        Config config = Config.Default();
        config.Run = RunMode.Caller;
        var w = new World(config);
        for (ulong i = 0; i < 5; i++)
            w.Add(i, i, 0, 10);
        w.Tick();
        int calls = 0;
        w.Deliver((watcher, tag, events) => {
            if (calls++ == 0)
                w.Dispose();
            Equal(4, events.Length, "events of watcher " + watcher);
        });
        Equal(5, calls, "every watcher delivered");
        Expect(w.Handle.IsClosed, "handle closed");
        try {
            w.Tick();
            Expect(false, "ObjectDisposedException");
        } catch (ObjectDisposedException) {
        }
    }

    static void ConcurrentSegments()
    {
        Config config = Config.Default();
        config.Threads = 2;
        config.Shards = 4;
        using (var w = new World(config)) {
            for (ulong i = 0; i < 400; i++)
                w.Add(i, (i % 20) * 50, (i / 20) * 50, 120);
            w.Tick();
            var counts = new long[2];
            var errors = new Exception[2];
            var threads = new System.Threading.Thread[2];
            using (var start = new System.Threading.Barrier(2)) {
                for (int k = 0; k < 2; k++) {
                    int segment = k;
                    threads[k] = new System.Threading.Thread(() => {
                        try {
                            start.SignalAndWait();
                            w.DeliverSegment(segment, (watcher, tag, events) =>
                                counts[segment] += events.Length);
                        } catch (Exception e) {
                            errors[segment] = e;
                        }
                    });
                    threads[k].Start();
                }
                foreach (var t in threads)
                    t.Join();
            }
            Expect(errors[0] == null && errors[1] == null,
                   "no errors: " + errors[0] + errors[1]);
            Expect(counts[0] > 0 && counts[1] > 0, "both segments had events");
            Equal((long)w.Stats.Events, counts[0] + counts[1], "every event");
        }
    }

    static void NoAllocation()
    {
        Config config = Config.Default();
        config.Threads = 2;
        using (var w = new World(config)) {
            const int n = 2000;
            var rng = new Random(7);
            var ops = new MoveOp[n];
            for (int i = 0; i < n; i++) {
                ops[i] = new MoveOp((ulong)i, (float)rng.NextDouble() * 1000,
                                    (float)rng.NextDouble() * 1000);
                w.Add(ops[i].Id, ops[i].X, ops[i].Y, 30);
            }
            DeliveryHandler h = Checksum.Handler;
            for (int t = 0; t < 20; t++)
                Step(w, ops, h);
            GC.Collect();
            GC.WaitForPendingFinalizers();
            int gen0Start = GC.CollectionCount(0);
            long bytesStart = GC.GetAllocatedBytesForCurrentThread();
            for (int t = 0; t < 100; t++)
                Step(w, ops, h);
            long allocated = GC.GetAllocatedBytesForCurrentThread() - bytesStart;
            int collections = GC.CollectionCount(0) - gen0Start;
            Console.WriteLine("  gc: 100 warm ticks of MoveMany+Tick+Deliver: " +
                              collections + " gen0 collections, " + allocated +
                              " bytes allocated, " + Checksum.Events + " events");
            Equal(0, collections, "gen0 collections over 100 ticks");
            Expect(allocated < 1024, "under 1 KiB allocated over 100 ticks, got " + allocated);
        }
    }

    static void Step(World w, MoveOp[] ops, DeliveryHandler h)
    {
        for (int i = 0; i < ops.Length; i++) {
            ops[i].X += 1;
            ops[i].Y += 0.5f;
        }
        w.MoveMany(ops, ops.Length);
        w.Tick();
        w.Deliver(h);
    }

    static void Crowd()
    {
        string path = Environment.GetEnvironmentVariable("AOI_OPS");
        string want = Environment.GetEnvironmentVariable("AOI_CHECKSUM");
        if (string.IsNullOrEmpty(path) || string.IsNullOrEmpty(want)) {
            Console.WriteLine("  crowd: skipped (AOI_OPS, AOI_CHECKSUM unset)");
            return;
        }
        Replay r = Replay.Load(path);
        using (var w = new World(r.Config(1))) {
            Checksum.Sum = Checksum.Seed;
            for (int t = 0; t < r.Ticks; t++) {
                r.Submit(w, t);
                w.Tick();
                Checksum.Events = 0;
                w.Deliver(Checksum.Handler);
                Equal((long)w.Stats.Events, Checksum.Events, "tick " + t + " events");
            }
            Console.WriteLine("  crowd: " + r.Entities + " entities, " + r.Ticks +
                              " ticks, checksum " + Checksum.Hex(Checksum.Sum) +
                              ", aoi-bench " + want);
            Equal(want, Checksum.Hex(Checksum.Sum), "checksum");
        }
    }

    static void Finalized()
    {
        for (int i = 0; i < 3; i++)
            Abandon();
        GC.Collect();
        GC.WaitForPendingFinalizers();
        using (var w = new World())
            w.Tick();
    }

    static void Abandon()
    {
        var w = new World();
        w.Add(1, 0, 0, 1);
        w.Tick();
    }
}
