// Replay.cs: reads the operations aoi-bench --dump-ops writes (the format
// is the comment above dump_open in bench/aoi-bench.c) and plays them into
// a World, and computes aoi-bench's event checksum (bench/bench.h). Shared
// by Tests.cs and Bench.cs; not part of Aoi.dll.
//
// Each tick is loaded ahead into steps: every run of consecutive moves is
// one MoveOp[] of its exact length, handed to MoveMany as it is.
using System;
using System.Collections.Generic;
using System.IO;
using System.Text;

namespace Aoi
{
    sealed class Replay
    {
        public struct Step
        {
            public byte Kind;      // 0 add, 1 move (a run), 2 remove
            public Entity Entity;  // add
            public MoveOp[] Moves; // move
            public ulong Id;       // remove
        }

        public uint Entities, Ticks;
        public float Side, MaxRadius;
        public Step[][] Steps; // per tick

        public static Replay Load(string path)
        {
            var r = new Replay();
            using (var reader = new BinaryReader(File.OpenRead(path))) {
                if (Encoding.ASCII.GetString(reader.ReadBytes(8)) != "AOIOPS01")
                    throw new InvalidDataException(path + ": not an AOIOPS01 file");
                r.Entities = reader.ReadUInt32();
                r.Ticks = reader.ReadUInt32();
                r.Side = reader.ReadSingle();
                r.MaxRadius = reader.ReadSingle();
                r.Steps = new Step[r.Ticks][];
                var steps = new List<Step>();
                var moves = new List<MoveOp>();
                for (uint t = 0; t < r.Ticks; t++) {
                    steps.Clear();
                    uint n = reader.ReadUInt32();
                    for (uint i = 0; i < n; i++) {
                        ulong id = reader.ReadUInt64();
                        float x = reader.ReadSingle(), y = reader.ReadSingle();
                        float radius = reader.ReadSingle();
                        byte kind = reader.ReadByte(), flags = reader.ReadByte();
                        reader.ReadUInt16();
                        if (kind != 1 && moves.Count > 0) {
                            steps.Add(new Step { Kind = 1, Moves = moves.ToArray() });
                            moves.Clear();
                        }
                        if (kind == 0) {
                            var e = new Entity {
                                Id = id, Tag = id, X = x, Y = y, Radius = radius,
                                Flags = (EntityFlags)flags,
                                Layers = Entity.AllLayers, Interest = Entity.AllLayers,
                            };
                            steps.Add(new Step { Kind = 0, Entity = e });
                        } else if (kind == 1) {
                            moves.Add(new MoveOp(id, x, y));
                        } else if (kind == 2) {
                            steps.Add(new Step { Kind = 2, Id = id });
                        } else {
                            throw new InvalidDataException(path + ": bad operation kind " + kind);
                        }
                    }
                    if (moves.Count > 0) {
                        steps.Add(new Step { Kind = 1, Moves = moves.ToArray() });
                        moves.Clear();
                    }
                    r.Steps[t] = steps.ToArray();
                }
            }
            return r;
        }

        /// <summary>The world the dump was made for, on `threads` lanes.</summary>
        public Config Config(uint threads)
        {
            Config c = Aoi.Config.Default();
            c.MinX = 0;
            c.MinY = 0;
            c.MaxX = Side;
            c.MaxY = Side;
            c.MaxRadius = MaxRadius;
            c.Threads = threads;
            return c;
        }

        /// <summary>Submits tick t's operations (allocates nothing).</summary>
        public void Submit(World world, int t)
        {
            Step[] steps = Steps[t];
            for (int i = 0; i < steps.Length; i++) {
                switch (steps[i].Kind) {
                case 0: world.Add(steps[i].Entity); break;
                case 1: world.MoveMany(steps[i].Moves, steps[i].Moves.Length); break;
                default: world.Remove(steps[i].Id); break;
                }
            }
        }
    }

    /// <summary>aoi-bench's checksum (bench/bench.h): a wrapping sum of
    /// hash_outbox(SEED, watcher, events) per watcher delivery.</summary>
    static class Checksum
    {
        public const ulong Seed = 0xcbf29ce484222325UL;

        public static ulong Sum;
        public static long Events;
        // Cached once: Deliver(Checksum.Handler) allocates nothing.
        public static readonly DeliveryHandler Handler = Add;

        static void Add(ulong watcher, ulong tag, ReadOnlySpan<Event> events)
        {
            unchecked {
                Sum += HashOutbox(Seed, watcher, events);
            }
            Events += events.Length;
        }

        static ulong Mix(ulong h, ulong v)
        {
            unchecked {
                h ^= v;
                h *= 0x100000001b3UL;
                return h ^ (h >> 29);
            }
        }

        static unsafe ulong FloatBits(float f) => (ulong)*(uint*)&f;

        public static ulong HashOutbox(ulong h, ulong watcher, ReadOnlySpan<Event> events)
        {
            h = Mix(h, watcher);
            h = Mix(h, (ulong)events.Length);
            for (int j = 0; j < events.Length; j++) {
                ref readonly Event e = ref events[j];
                h = Mix(h, e.Id);
                h = Mix(h, ((ulong)e.Kind << 32) | e.Tick);
                h = Mix(h, (FloatBits(e.X) << 32) | FloatBits(e.Y));
            }
            return h;
        }

        public static string Hex(ulong v) => v.ToString("x16");
    }
}
