// Package opsfile reads the operations aoi-bench --dump-ops writes and
// replays them on a World, for the crowd test and cmd/aoi-go-bench; and
// computes aoi-bench's checksum (bench/bench.h) over delivered events.
//
// The format (the comment above dump_open in bench/aoi-bench.c):
// little-endian, "AOIOPS01", u32 entities, u32 ticks (warm-up
// included), f32 side, f32 max_radius; then per tick a u32 count and
// that many 24-byte records: u64 id, f32 x, f32 y, f32 radius, u8 kind
// (0 add, 1 move, 2 remove), u8 flags, u16 zero. Every add has every
// layer and interest, and its id as its tag.
package opsfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"aoi"
)

// Operation kinds.
const (
	KindAdd    = 0
	KindMove   = 1
	KindRemove = 2
)

// Op is one record.
type Op struct {
	ID     uint64
	X, Y   float32
	Radius float32
	Kind   uint8
	Flags  uint8
}

// Step is a run of moves (Moves, for MoveMany) or one other Op.
type Step struct {
	Moves []aoi.Move
	Op    Op
}

// File is a loaded dump: each tick's operations, moves already batched.
type File struct {
	Entities  uint32
	Side      float32
	MaxRadius float32
	Ticks     [][]Step
	Updates   int // operations in all
}

// Load reads a dump.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 24 || string(b[:8]) != "AOIOPS01" {
		return nil, errors.New("opsfile: not an AOIOPS01 file")
	}
	le := binary.LittleEndian
	f := &File{
		Entities:  le.Uint32(b[8:]),
		Side:      math.Float32frombits(le.Uint32(b[16:])),
		MaxRadius: math.Float32frombits(le.Uint32(b[20:])),
	}
	ticks := int(le.Uint32(b[12:]))
	p := 24
	for t := 0; t < ticks; t++ {
		if p+4 > len(b) {
			return nil, fmt.Errorf("opsfile: tick %d: truncated", t)
		}
		n := int(le.Uint32(b[p:]))
		p += 4
		if p+24*n > len(b) {
			return nil, fmt.Errorf("opsfile: tick %d: truncated", t)
		}
		var steps []Step
		for i := 0; i < n; i++ {
			r := b[p : p+24]
			p += 24
			op := Op{
				ID:     le.Uint64(r),
				X:      math.Float32frombits(le.Uint32(r[8:])),
				Y:      math.Float32frombits(le.Uint32(r[12:])),
				Radius: math.Float32frombits(le.Uint32(r[16:])),
				Kind:   r[20],
				Flags:  r[21],
			}
			if op.Kind > KindRemove {
				return nil, fmt.Errorf("opsfile: tick %d: kind %d", t, op.Kind)
			}
			if op.Kind == KindMove {
				if k := len(steps) - 1; k >= 0 && steps[k].Moves != nil {
					steps[k].Moves = append(steps[k].Moves, aoi.Move{ID: op.ID, X: op.X, Y: op.Y})
					continue
				}
				steps = append(steps, Step{Moves: []aoi.Move{{ID: op.ID, X: op.X, Y: op.Y}}})
				continue
			}
			steps = append(steps, Step{Op: op})
		}
		f.Updates += n
		f.Ticks = append(f.Ticks, steps)
	}
	if p != len(b) {
		return nil, errors.New("opsfile: trailing bytes")
	}
	return f, nil
}

// Config is the world configuration aoi-bench's crowd runs under.
func (f *File) Config(threads uint) aoi.Config {
	return aoi.Config{Threads: threads, MaxX: f.Side, MaxY: f.Side,
		MaxRadius: f.MaxRadius}
}

// Submit submits tick t's operations: each run of moves through
// MoveMany, adds with every layer and interest and the id as the tag.
func (f *File) Submit(w *aoi.World, t int) error {
	for _, s := range f.Ticks[t] {
		if s.Moves != nil {
			if done, err := w.MoveMany(s.Moves); err != nil {
				return fmt.Errorf("tick %d: MoveMany(%d): %w", t, s.Moves[done].ID, err)
			}
			continue
		}
		var err error
		if s.Op.Kind == KindAdd {
			err = w.Add(aoi.Entity{ID: s.Op.ID, Tag: s.Op.ID, X: s.Op.X,
				Y: s.Op.Y, Radius: s.Op.Radius, Flags: uint32(s.Op.Flags),
				Layers: aoi.AllLayers, Interest: aoi.AllLayers})
		} else {
			err = w.Remove(s.Op.ID)
		}
		if err != nil {
			return fmt.Errorf("tick %d: op %d of %d: %w", t, s.Op.Kind, s.Op.ID, err)
		}
	}
	return nil
}

// Seed is BENCH_CHECKSUM_SEED.
const Seed uint64 = 0xcbf29ce484222325

func mix(h, v uint64) uint64 {
	h ^= v
	h *= 0x100000001b3
	return h ^ (h >> 29)
}

// HashOutbox is bench.h's hash_outbox: one watcher's delivery. aoi-bench's
// checksum starts at Seed and adds, wrapping, HashOutbox(Seed, ...) of
// every delivery of every tick (warm-up included).
func HashOutbox(h, watcher uint64, events []aoi.Event) uint64 {
	h = mix(h, watcher)
	h = mix(h, uint64(len(events)))
	for i := range events {
		e := &events[i]
		h = mix(h, e.ID)
		h = mix(h, uint64(e.Kind)<<32|uint64(e.Tick))
		h = mix(h, uint64(math.Float32bits(e.X))<<32|uint64(math.Float32bits(e.Y)))
	}
	return h
}
