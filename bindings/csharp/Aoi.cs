// Aoi.cs: the C# binding of libaoi (include/aoi.h), P/Invoke over
// libaoi.so. One file, base class library only, for Mono 6.8 (mcs
// -unsafe -langversion:7.2) and .NET 6+ (Aoi.csproj).
//
// What it keeps:
//  - Config, Entity, MoveOp, Event and Stats are blittable mirrors of the
//    C structs, field for field (x86-64 Linux layout; Tests.cs checks every
//    size and several offsets against a C helper, layout.c). Calls pass
//    them by pointer: nothing is copied or converted on the way.
//  - A World owns its aoi_world through WorldHandle, a SafeHandle:
//    aoi_destroy runs once, after the last call in progress has returned
//    (SafeHandle's reference count), also when the World is only
//    finalized.
//  - Delivery is one static native callback (a delegate kept alive in a
//    static field, its function pointer taken once) and a GCHandle per
//    delivery segment, allocated with the World: a tick delivered
//    allocates nothing. The handler sees each watcher's events as a
//    ReadOnlySpan<Event> over the library's own outbox, valid only during
//    the call.
//  - No exception crosses a native frame: the callback catches what a
//    handler throws, keeps delivering the other watchers, and Deliver
//    rethrows the first exception (its original stack kept) once
//    aoi_deliver has returned.
//  - The thread rules are the library's (aoi.h, "Threads"): one host
//    thread at a time; DeliverSegment of different segments may run on
//    different threads at once.
using System;
using System.Reflection;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace Aoi
{
    /// <summary>The library's error codes (AOI_E*), all negative.</summary>
    public enum AoiError
    {
        None = 0,
        Invalid = -1,     // AOI_EINVAL: NULL, bad config or bad argument
        NoMemory = -2,    // AOI_ENOMEM
        Exists = -3,      // AOI_EEXIST: Add of a live id
        NotFound = -4,    // AOI_ENOENT: the id is not live
        Coordinate = -5,  // AOI_ECOORD: NaN or infinite coordinate
        Radius = -6,      // AOI_ERADIUS: radius or appeal out of range
        Flags = -7,       // AOI_EFLAGS
        System = -8,      // AOI_ESYS
        Busy = -9,        // AOI_EBUSY: tick or delivery under way
    }

    /// <summary>A call the library refused: its code and aoi_strerror's text.</summary>
    public class AoiException : Exception
    {
        public AoiError Code { get; }
        /// <summary>MoveMany only: how many moves stood before the one that failed.</summary>
        public int Done { get; }

        public AoiException(AoiError code, int done = 0)
            : base(Native.Message((int)code))
        {
            Code = code;
            Done = done;
        }
    }

    [Flags]
    public enum EntityFlags : uint
    {
        Watcher = 1,  // AOI_WATCHER: has a view, receives events
        Marker = 2,   // AOI_MARKER: can be seen
        Both = 3,
    }

    public enum EventKind : uint { Leave = 0, Enter = 1, Move = 2 }

    public enum Shape { Circle = 0, Square = 1, Cells = 2 }

    /// <summary>aoi_run. Pool is not bound (no aoi_pool API here).</summary>
    public enum RunMode { Own = 0, Pool = 1, Caller = 2 }

    /// <summary>aoi_move_band.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct MoveBand
    {
        public float Distance;
        public uint Period;

        public MoveBand(float distance, uint period)
        {
            Distance = distance;
            Period = period;
        }
    }

    /// <summary>aoi_config, field for field; start from Config.Default().</summary>
    [StructLayout(LayoutKind.Sequential)]
    public unsafe struct Config
    {
        public const int MaxMoveBands = 8; // AOI_MAX_MOVE_BANDS

        public RunMode Run;
        IntPtr pool;            // aoi_pool *: always NULL here
        public uint Threads;
        public uint Shards;
        public float MinX, MinY, MaxX, MaxY;
        public float MaxRadius;
        public float Hysteresis;
        public int MoveEvents;  // 1: produce move events
        public Shape Shape;
        public float CellSize;
        public uint RebalanceInterval;
        fixed uint moveBands[MaxMoveBands * 2]; // aoi_move_band[8]: {float, uint32}
        public uint MoveBandCount;
        public uint PinThreads;
        public uint MeasureCpu;
        IntPtr allocator;       // const aoi_allocator *: always NULL (malloc)

        /// <summary>aoi_config_default's values.</summary>
        public static Config Default()
        {
            Config c;
            Native.aoi_config_default(&c);
            return c;
        }

        public MoveBand GetMoveBand(int i)
        {
            if ((uint)i >= MaxMoveBands)
                throw new ArgumentOutOfRangeException(nameof(i));
            fixed (uint* p = moveBands)
                return ((MoveBand*)p)[i];
        }

        public void SetMoveBand(int i, MoveBand band)
        {
            if ((uint)i >= MaxMoveBands)
                throw new ArgumentOutOfRangeException(nameof(i));
            fixed (uint* p = moveBands)
                ((MoveBand*)p)[i] = band;
        }
    }

    /// <summary>aoi_entity: what Add takes.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct Entity
    {
        public ulong Id;
        public ulong Tag;          // the host's own value, handed back with events
        public float X, Y;
        public float Radius;       // 0 .. Config.MaxRadius
        public EntityFlags Flags;
        public uint Layers;        // the layers it is in
        public uint Interest;      // the layers it watches

        public const uint AllLayers = 0xffffffffu; // AOI_ALL_LAYERS
    }

    /// <summary>aoi_move_op: one move of MoveMany.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct MoveOp
    {
        public ulong Id;
        public float X, Y;

        public MoveOp(ulong id, float x, float y)
        {
            Id = id;
            X = x;
            Y = y;
        }
    }

    /// <summary>aoi_event: 32 bytes.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct Event
    {
        public ulong Id;       // the entity that entered, left or moved
        public ulong Tag;      // its tag
        public float X, Y;     // its position (enter, move); 0 for leave
        public EventKind Kind;
        public uint Tick;      // the tick that produced it (low 32 bits)
    }

    /// <summary>aoi_stats: the statistics of the last tick.</summary>
    [StructLayout(LayoutKind.Sequential)]
    public struct Stats
    {
        public ulong Tick;
        public uint Threads;
        public uint Shards;
        public ulong Entities;
        public ulong Watchers;
        public ulong Ghosts;
        public ulong Handoffs;
        public ulong Rebalances;
        public ulong Events;
        public ulong TickNs;
        public ulong ApplyNs, ExchangeNs, ComputeNs; // phase_ns[3]
        public ulong WorkNs, SpanNs;
        IntPtr shardEntities;  // borrowed per-shard arrays: not exposed
        IntPtr shardNs;
    }

    /// <summary>
    /// A delivery handler: one watcher's undelivered events, older ticks
    /// first. <paramref name="events"/> points into the library's outbox and
    /// is valid only during the call: copy what must outlive it. The
    /// handler must not call into its world (AOI_EBUSY).
    /// </summary>
    public delegate void DeliveryHandler(ulong watcher, ulong watcherTag,
                                         ReadOnlySpan<Event> events);

    /// <summary>
    /// Owns an aoi_world and the GCHandles its deliveries pass as `user`;
    /// ReleaseHandle is aoi_destroy, then frees them.
    /// </summary>
    public sealed class WorldHandle : SafeHandle
    {
        internal GCHandle[] Deliveries = new GCHandle[0];

        public WorldHandle() : base(IntPtr.Zero, true) { }

        public override bool IsInvalid => handle == IntPtr.Zero;

        internal void Adopt(IntPtr raw) => SetHandle(raw);

        protected override bool ReleaseHandle()
        {
            // SafeHandle runs this after the last call using the handle has
            // returned, so no delivery runs and aoi_destroy cannot be busy.
            bool ok = Native.aoi_destroy(handle) == 0;
            foreach (GCHandle g in Deliveries)
                if (g.IsAllocated)
                    g.Free();
            return ok;
        }
    }

    /// <summary>An AOI world: see include/aoi.h for every call's contract.</summary>
    public sealed unsafe class World : IDisposable
    {
        // One per delivery segment, pinned by a GCHandle for the world's
        // life: the native callback's `user` pointer.
        sealed class Delivery
        {
            public DeliveryHandler Handler;
            public ExceptionDispatchInfo Error; // the first a handler threw
            public int Busy;                     // 1 while a DeliverSegment runs
            public IntPtr Self;                  // GCHandle.ToIntPtr
        }

        readonly WorldHandle world;
        readonly Delivery[] segments;
        bool disposed;

        public World() : this(Config.Default()) { }

        public World(Config config)
        {
            world = new WorldHandle();
            IntPtr raw;
            Check(Native.aoi_create(&config, out raw));
            world.Adopt(raw);
            int n = (int)Native.aoi_delivery_segments(world);
            segments = new Delivery[n];
            var handles = new GCHandle[n];
            for (int i = 0; i < n; i++) {
                segments[i] = new Delivery();
                handles[i] = GCHandle.Alloc(segments[i]);
                segments[i].Self = GCHandle.ToIntPtr(handles[i]);
            }
            world.Deliveries = handles;
        }

        /// <summary>The library's version string ("0.3.0").</summary>
        public static string Version =>
            Marshal.PtrToStringAnsi(Native.aoi_version_string());

        /// <summary>aoi_version(): 10000 * major + 100 * minor + patch.</summary>
        public static uint VersionNumber => Native.aoi_version();

        /// <summary>The number of delivery segments (one per lane).</summary>
        public int Segments => segments.Length;

        public WorldHandle Handle => world;

        public void Add(Entity entity)
        {
            Live();
            Check(Native.aoi_add(world, &entity));
        }

        public void Add(ulong id, float x, float y, float radius,
                        EntityFlags flags = EntityFlags.Both, ulong tag = 0,
                        uint layers = Entity.AllLayers,
                        uint interest = Entity.AllLayers)
        {
            Entity e;
            e.Id = id;
            e.Tag = tag;
            e.X = x;
            e.Y = y;
            e.Radius = radius;
            e.Flags = flags;
            e.Layers = layers;
            e.Interest = interest;
            Add(e);
        }

        public void Move(ulong id, float x, float y)
        {
            Live();
            Check(Native.aoi_move(world, id, x, y));
        }

        /// <summary>
        /// Moves ops[0] .. ops[count - 1] in order (aoi_move_many), passing
        /// the array itself, pinned. On a failure the moves before it stand
        /// and AoiException.Done says how many.
        /// </summary>
        public void MoveMany(MoveOp[] ops, int count)
        {
            Live();
            if (ops == null)
                throw new ArgumentNullException(nameof(ops));
            if ((uint)count > (uint)ops.Length)
                throw new ArgumentOutOfRangeException(nameof(count));
            UIntPtr done;
            int rc;
            fixed (MoveOp* p = ops)
                rc = Native.aoi_move_many(world, p, (UIntPtr)(uint)count, out done);
            if (rc != 0)
                throw new AoiException((AoiError)rc, (int)(ulong)done);
        }

        public void SetRadius(ulong id, float radius)
        {
            Live();
            Check(Native.aoi_set_radius(world, id, radius));
        }

        public void SetLayers(ulong id, uint layers, uint interest)
        {
            Live();
            Check(Native.aoi_set_layers(world, id, layers, interest));
        }

        public void SetAppeal(ulong id, float appeal)
        {
            Live();
            Check(Native.aoi_set_appeal(world, id, appeal));
        }

        public void SetCap(ulong id, uint cap)
        {
            Live();
            Check(Native.aoi_set_cap(world, id, cap));
        }

        public void SetTag(ulong id, ulong tag)
        {
            Live();
            Check(Native.aoi_set_tag(world, id, tag));
        }

        public void Remove(ulong id)
        {
            Live();
            Check(Native.aoi_remove(world, id));
        }

        /// <summary>Applies every queued operation and leaves the tick's events.</summary>
        public void Tick()
        {
            Live();
            Check(Native.aoi_tick(world));
        }

        /// <summary>
        /// Delivers every segment in turn on this thread. If handlers throw,
        /// every segment is still delivered and the first exception is
        /// rethrown at the end. Not for several threads at once: use
        /// DeliverSegment, one segment a thread.
        /// </summary>
        public void Deliver(DeliveryHandler handler)
        {
            Live();
            ExceptionDispatchInfo first = null;
            // A handler may Dispose the world: the segments after are dropped.
            for (int i = 0; i < segments.Length && !disposed; i++) {
                ExceptionDispatchInfo e = DeliverOne(i, handler);
                if (first == null)
                    first = e;
            }
            if (first != null)
                first.Throw();
        }

        /// <summary>
        /// Delivers one segment (aoi_deliver). Different segments may be
        /// delivered on different threads at once; while any runs, every
        /// other call on this world fails with AoiError.Busy.
        /// </summary>
        public void DeliverSegment(int segment, DeliveryHandler handler)
        {
            ExceptionDispatchInfo e = DeliverOne(segment, handler);
            if (e != null)
                e.Throw();
        }

        ExceptionDispatchInfo DeliverOne(int segment, DeliveryHandler handler)
        {
            Live();
            if (handler == null)
                throw new ArgumentNullException(nameof(handler));
            if ((uint)segment >= (uint)segments.Length)
                throw new AoiException(AoiError.Invalid);
            Delivery d = segments[segment];
            if (Interlocked.CompareExchange(ref d.Busy, 1, 0) != 0)
                throw new AoiException(AoiError.Busy);
            int rc;
            ExceptionDispatchInfo error;
            try {
                d.Handler = handler;
                d.Error = null;
                rc = Native.aoi_deliver(world, (uint)segment, Native.DeliverPointer,
                                        d.Self);
            } finally {
                error = d.Error;
                d.Handler = null;
                d.Error = null;
                Volatile.Write(ref d.Busy, 0);
            }
            if (error != null)
                return error;
            Check(rc);
            return null;
        }

        // The native callback's target: catches everything, so that no
        // exception unwinds through aoi_deliver's frames.
        internal static void OnDeliver(IntPtr user, ulong watcher, ulong tag,
                                       Event* events, UIntPtr count)
        {
            Delivery d = null;
            try {
                d = (Delivery)GCHandle.FromIntPtr(user).Target;
                d.Handler(watcher, tag,
                          new ReadOnlySpan<Event>(events, (int)(ulong)count));
            } catch (Exception e) {
                if (d != null && d.Error == null)
                    d.Error = ExceptionDispatchInfo.Capture(e);
            }
        }

        /// <summary>
        /// Live markers within the circle whose layers meet layerMask, ids
        /// ascending: writes at most ids.Length of them (ids may be null)
        /// and returns the total found.
        /// </summary>
        public int QueryCircle(float x, float y, float radius, uint layerMask,
                               ulong[] ids)
        {
            Live();
            UIntPtr count;
            fixed (ulong* p = ids)
                Check(Native.aoi_query_circle(world, x, y, radius, layerMask, p,
                                              Capacity(ids), out count));
            return (int)(ulong)count;
        }

        /// <summary>The current view of watcher id, as QueryCircle writes.</summary>
        public int View(ulong id, ulong[] ids)
        {
            Live();
            UIntPtr count;
            fixed (ulong* p = ids)
                Check(Native.aoi_view(world, id, p, Capacity(ids), out count));
            return (int)(ulong)count;
        }

        /// <summary>The watchers whose view holds id, as QueryCircle writes.</summary>
        public int WatchersOf(ulong id, ulong[] ids)
        {
            Live();
            UIntPtr count;
            fixed (ulong* p = ids)
                Check(Native.aoi_watchers_of(world, id, p, Capacity(ids), out count));
            return (int)(ulong)count;
        }

        /// <summary>The statistics of the last tick.</summary>
        public Stats Stats
        {
            get {
                Live();
                Stats s;
                Check(Native.aoi_world_stats(world, &s));
                return s;
            }
        }

        /// <summary>Destroys the world (after any call in progress returns).</summary>
        public void Dispose()
        {
            if (disposed)
                return;
            disposed = true;
            world.Dispose();
        }

        static UIntPtr Capacity(ulong[] ids) =>
            (UIntPtr)(uint)(ids == null ? 0 : ids.Length);

        void Live()
        {
            if (disposed)
                throw new ObjectDisposedException(nameof(World));
        }

        static void Check(int rc)
        {
            if (rc != 0)
                throw new AoiException((AoiError)rc);
        }
    }

    static unsafe class Native
    {
        // "aoi": Mono maps it through Aoi.dll.config (libaoi.so.0.3); .NET
        // probes libaoi.so, and the resolver below tries the SONAME first.
        const string Lib = "aoi";

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void DeliverFn(IntPtr user, ulong watcher, ulong tag,
                                         Event* events, UIntPtr count);

        // Kept alive for the process: the library calls through its pointer.
        static readonly DeliverFn deliver = World.OnDeliver;
        internal static readonly IntPtr DeliverPointer =
            Marshal.GetFunctionPointerForDelegate(deliver);

#if NET6_0_OR_GREATER
        static Native()
        {
            NativeLibrary.SetDllImportResolver(typeof(Native).Assembly, Resolve);
        }

        static IntPtr Resolve(string name, Assembly assembly,
                              DllImportSearchPath? path)
        {
            IntPtr h;
            if (name == Lib && NativeLibrary.TryLoad("libaoi.so.0.3", assembly, path, out h))
                return h;
            return IntPtr.Zero; // the default probing
        }
#endif

        internal static string Message(int code) =>
            Marshal.PtrToStringAnsi(aoi_strerror(code));

        [DllImport(Lib)] internal static extern uint aoi_version();
        [DllImport(Lib)] internal static extern IntPtr aoi_version_string();
        [DllImport(Lib)] internal static extern IntPtr aoi_strerror(int code);
        [DllImport(Lib)] internal static extern void aoi_config_default(Config* config);
        [DllImport(Lib)] internal static extern int aoi_create(Config* config, out IntPtr world);
        [DllImport(Lib)] internal static extern int aoi_destroy(IntPtr world);
        [DllImport(Lib)] internal static extern int aoi_add(WorldHandle w, Entity* entity);
        [DllImport(Lib)] internal static extern int aoi_move(WorldHandle w, ulong id, float x, float y);
        [DllImport(Lib)] internal static extern int aoi_move_many(WorldHandle w, MoveOp* ops, UIntPtr n, out UIntPtr done);
        [DllImport(Lib)] internal static extern int aoi_set_radius(WorldHandle w, ulong id, float radius);
        [DllImport(Lib)] internal static extern int aoi_set_layers(WorldHandle w, ulong id, uint layers, uint interest);
        [DllImport(Lib)] internal static extern int aoi_set_appeal(WorldHandle w, ulong id, float appeal);
        [DllImport(Lib)] internal static extern int aoi_set_cap(WorldHandle w, ulong id, uint cap);
        [DllImport(Lib)] internal static extern int aoi_set_tag(WorldHandle w, ulong id, ulong tag);
        [DllImport(Lib)] internal static extern int aoi_remove(WorldHandle w, ulong id);
        [DllImport(Lib)] internal static extern int aoi_tick(WorldHandle w);
        [DllImport(Lib)] internal static extern uint aoi_delivery_segments(WorldHandle w);
        [DllImport(Lib)] internal static extern int aoi_deliver(WorldHandle w, uint segment, IntPtr fn, IntPtr user);
        [DllImport(Lib)] internal static extern int aoi_query_circle(WorldHandle w, float x, float y, float radius, uint layerMask, ulong* ids, UIntPtr capacity, out UIntPtr count);
        [DllImport(Lib)] internal static extern int aoi_view(WorldHandle w, ulong id, ulong* ids, UIntPtr capacity, out UIntPtr count);
        [DllImport(Lib)] internal static extern int aoi_watchers_of(WorldHandle w, ulong id, ulong* ids, UIntPtr capacity, out UIntPtr count);
        [DllImport(Lib)] internal static extern int aoi_world_stats(WorldHandle w, Stats* stats);
    }
}
