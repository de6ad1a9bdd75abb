package aoi

import (
	"errors"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func checkLayout(t *testing.T, what string, goSize, cSize uintptr, fields []fieldLayout) {
	t.Helper()
	if goSize != cSize {
		t.Errorf("%s: Go size %d, C size %d", what, goSize, cSize)
	}
	for _, f := range fields {
		if f.goOff != f.cOff || f.goLen != f.cLen {
			t.Errorf("%s.%s: Go offset %d size %d, C offset %d size %d",
				what, f.name, f.goOff, f.goLen, f.cOff, f.cLen)
		}
	}
}

func TestLayout(t *testing.T) {
	gs, cs, fields := eventLayout()
	checkLayout(t, "Event", gs, cs, fields)
	if gs != 32 {
		t.Errorf("Event is %d bytes, want 32", gs)
	}
	gs, cs, fields = moveLayout()
	checkLayout(t, "Move", gs, cs, fields)
	if gs != 16 {
		t.Errorf("Move is %d bytes, want 16", gs)
	}
}

// crowd is a test world of n watcher-markers on a grid walk: lcg-placed
// in a square sized for about 30 neighbours within radius 10.
type crowd struct {
	w     *World
	moves []Move
	side  float32
	rng   uint64
}

func (c *crowd) next() float32 {
	c.rng = c.rng*6364136223846793005 + 1442695040888963407
	return float32(c.rng>>40) / float32(1<<24)
}

func newCrowd(t testing.TB, cfg Config, n int) *crowd {
	t.Helper()
	side := float32(math.Sqrt(float64(n) * math.Pi * 100 / 30))
	cfg.MaxX, cfg.MaxY = side, side
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &crowd{w: w, side: side, rng: 1}
	c.moves = make([]Move, n)
	for i := range c.moves {
		m := &c.moves[i]
		m.ID = uint64(i + 1)
		m.X, m.Y = c.next()*side, c.next()*side
		err := w.Add(Entity{ID: m.ID, Tag: m.ID * 10, X: m.X, Y: m.Y,
			Radius: 10, Flags: Watcher | Marker, Layers: AllLayers,
			Interest: AllLayers})
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// step moves every entity a little, in place.
func (c *crowd) step() {
	for i := range c.moves {
		m := &c.moves[i]
		m.X += c.next() - 0.5
		m.Y += c.next() - 0.5
	}
}

func (c *crowd) tick(t testing.TB) {
	t.Helper()
	c.step()
	if _, err := c.w.MoveMany(c.moves); err != nil {
		t.Fatal(err)
	}
	if err := c.w.Tick(); err != nil {
		t.Fatal(err)
	}
}

func hashEvents(watcher uint64, events []Event) uint64 {
	h := uint64(0xcbf29ce484222325) ^ watcher
	for _, e := range events {
		h = (h ^ e.ID ^ uint64(e.Kind)<<32 ^ uint64(e.Tick)<<40 ^
			uint64(math.Float32bits(e.X))<<7 ^ uint64(math.Float32bits(e.Y))) *
			0x100000001b3
	}
	return h
}

func TestErrors(t *testing.T) {
	w, err := New(Config{Run: RunCaller})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ok := Entity{ID: 1, X: 1, Y: 1, Radius: 10, Flags: Watcher | Marker,
		Layers: AllLayers, Interest: AllLayers}
	if err := w.Add(ok); err != nil {
		t.Fatal(err)
	}
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"add twice", w.Add(ok), ErrExists},
		{"add NaN", w.Add(Entity{ID: 2, X: nan, Flags: Marker}), ErrCoord},
		{"add no flags", w.Add(Entity{ID: 2}), ErrFlags},
		{"add bad flags", w.Add(Entity{ID: 2, Flags: 8 | Marker}), ErrFlags},
		{"add radius", w.Add(Entity{ID: 2, Flags: Watcher, Radius: 1e6}), ErrRadius},
		{"move NaN", w.Move(1, nan, 0), ErrCoord},
		{"move inf", w.Move(1, 0, inf), ErrCoord},
		{"move unknown", w.Move(99, 0, 0), ErrNotFound},
		{"remove unknown", w.Remove(99), ErrNotFound},
		{"radius negative", w.SetRadius(1, -1), ErrRadius},
		{"appeal NaN", w.SetAppeal(1, nan), ErrRadius},
		{"cap unknown", w.SetCap(99, 1), ErrNotFound},
		{"tag unknown", w.SetTag(99, 1), ErrNotFound},
		{"layers unknown", w.SetLayers(99, 1, 1), ErrNotFound},
		{"segment", w.DeliverSegment(w.Segments(), func(uint64, uint64, []Event) {}), ErrInvalid},
		{"segment negative", w.DeliverSegment(-1, func(uint64, uint64, []Event) {}), ErrInvalid},
		{"nil callback", w.Deliver(nil), ErrInvalid},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.err, c.want)
		}
	}
	_, err = w.QueryCircle(0, 0, -1, AllLayers, nil)
	if !errors.Is(err, ErrRadius) {
		t.Errorf("query radius: %v", err)
	}
	_, err = w.View(99, nil)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("view unknown: %v", err)
	}
	_, err = w.WatchersOf(99, nil)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("watchers unknown: %v", err)
	}
	// MoveMany stops at the first failing move; the ones before stand.
	done, err := w.MoveMany([]Move{{1, 5, 5}, {99, 0, 0}, {1, 6, 6}})
	if done != 1 || !errors.Is(err, ErrNotFound) {
		t.Errorf("MoveMany: done %d err %v", done, err)
	}
	if !strings.Contains(ErrNotFound.Error(), "AOI_ENOENT") {
		t.Errorf("ErrNotFound text %q", ErrNotFound.Error())
	}
	var e Error
	if !errors.As(ErrBusy, &e) || e != -9 {
		t.Errorf("errors.As: %v", e)
	}
	if _, err := New(Config{Threads: 100000}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New(Threads: 100000): %v", err)
	}
	if _, err := New(Config{MoveBands: make([]MoveBand, 9)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New(9 bands): %v", err)
	}
	if _, err := New(Config{Shape: Cells, CellSize: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New(cell size -1): %v", err)
	}
}

func TestClosed(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(Entity{ID: 1, Flags: Watcher | Marker, Layers: 1, Interest: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Tick(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	fn := func(uint64, uint64, []Event) { t.Error("callback on a closed world") }
	_, errMany := w.MoveMany([]Move{{1, 0, 0}})
	_, errQuery := w.QueryCircle(0, 0, 1, AllLayers, nil)
	_, errView := w.View(1, nil)
	_, errWatchers := w.WatchersOf(1, nil)
	_, errStats := w.Stats()
	for i, err := range []error{
		w.Add(Entity{ID: 2, Flags: Marker}), w.Move(1, 0, 0), errMany,
		w.SetRadius(1, 1), w.SetLayers(1, 1, 1), w.SetAppeal(1, 1),
		w.SetCap(1, 1), w.SetTag(1, 1), w.Remove(1), w.Tick(),
		w.Deliver(fn), w.DeliverSegment(0, fn), errQuery, errView,
		errWatchers, errStats,
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("call %d on a closed world: %v", i, err)
		}
	}
}

func TestEventsAndQueries(t *testing.T) {
	w, err := New(Config{Run: RunCaller})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, e := range []Entity{
		{ID: 1, Tag: 100, X: 0, Y: 0, Radius: 10, Flags: Watcher | Marker},
		{ID: 2, Tag: 200, X: 5, Y: 0, Radius: 10, Flags: Marker},
		{ID: 3, Tag: 300, X: 50, Y: 0, Radius: 10, Flags: Marker},
	} {
		e.Layers, e.Interest = AllLayers, AllLayers
		if err := w.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Tick(); err != nil {
		t.Fatal(err)
	}
	type got struct {
		watcher, tag uint64
		events       []Event
	}
	var all []got
	collect := func(watcher, tag uint64, events []Event) {
		// events is borrowed: copy it.
		all = append(all, got{watcher, tag, append([]Event(nil), events...)})
	}
	if err := w.Deliver(collect); err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].watcher != 1 || all[0].tag != 100 {
		t.Fatalf("deliveries %+v", all)
	}
	// A watcher does not see itself; 3 is out of reach.
	want := Event{ID: 2, Tag: 200, X: 5, Y: 0, Kind: Enter, Tick: 1}
	if len(all[0].events) != 1 || all[0].events[0] != want {
		t.Fatalf("events %+v, want %+v", all[0].events, want)
	}

	ids, err := w.View(1, []uint64{42})
	if err != nil || len(ids) != 2 || ids[0] != 42 || ids[1] != 2 {
		t.Errorf("View: %v %v", ids, err)
	}
	buf := make([]uint64, 0, 8)
	ids, err = w.WatchersOf(2, buf)
	if err != nil || len(ids) != 1 || ids[0] != 1 || &ids[:1][0] != &buf[:1][0] {
		t.Errorf("WatchersOf: %v %v (want it in buf)", ids, err)
	}
	ids, err = w.QueryCircle(0, 0, 100, AllLayers, nil)
	if err != nil || len(ids) != 3 {
		t.Errorf("QueryCircle: %v %v", ids, err)
	}
	st, err := w.Stats()
	if err != nil || st.Tick != 1 || st.Entities != 3 || st.Watchers != 1 ||
		st.Events != 1 || len(st.ShardEntities) != int(st.Shards) {
		t.Errorf("Stats: %+v %v", st, err)
	}

	// Move 2 away, tag 3 anew: a leave for 2; nothing of 3 yet.
	if err := w.Move(2, 40, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.SetTag(1, 111); err != nil {
		t.Fatal(err)
	}
	if err := w.Tick(); err != nil {
		t.Fatal(err)
	}
	all = nil
	if err := w.Deliver(collect); err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].tag != 111 || len(all[0].events) != 1 ||
		all[0].events[0] != (Event{ID: 2, Tag: 200, Kind: Leave, Tick: 2}) {
		t.Fatalf("second tick %+v", all)
	}
}

func TestCallbackCannotCallWorld(t *testing.T) {
	c := newCrowd(t, Config{Run: RunCaller}, 50)
	defer c.w.Close()
	c.tick(t)
	calls := 0
	err := c.w.Deliver(func(watcher, tag uint64, events []Event) {
		calls++
		if err := c.w.Move(watcher, 0, 0); !errors.Is(err, ErrBusy) {
			t.Errorf("Move in a callback: %v", err)
		}
		if err := c.w.Close(); !errors.Is(err, ErrBusy) {
			t.Errorf("Close in a callback: %v", err)
		}
		if err := c.w.Deliver(func(uint64, uint64, []Event) {}); !errors.Is(err, ErrBusy) {
			t.Errorf("Deliver in a callback: %v", err)
		}
	})
	if err != nil || calls == 0 {
		t.Fatalf("Deliver: %v, %d calls", err, calls)
	}
}

// Close and host calls from another goroutine while a delivery runs are
// refused; the delivery finishes undisturbed.
func TestCloseDuringDelivery(t *testing.T) {
	c := newCrowd(t, Config{Threads: 2}, 100)
	defer c.w.Close()
	c.tick(t)
	inside := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	errs := make(chan error, 1)
	delivered := false
	go func() {
		err := c.w.DeliverSegment(0, func(uint64, uint64, []Event) {
			once.Do(func() { delivered = true; close(inside) })
			<-release
		})
		once.Do(func() { close(inside) }) // no watcher: do not hang
		errs <- err
	}()
	<-inside
	if !delivered {
		t.Fatal("segment 0 had no watcher with events")
	}
	if err := c.w.Close(); !errors.Is(err, ErrBusy) {
		t.Errorf("Close during a delivery: %v", err)
	}
	if err := c.w.Tick(); !errors.Is(err, ErrBusy) {
		t.Errorf("Tick during a delivery: %v", err)
	}
	if err := c.w.DeliverSegment(0, func(uint64, uint64, []Event) {}); !errors.Is(err, ErrBusy) {
		t.Errorf("the same segment twice: %v", err)
	}
	if err := c.w.DeliverSegment(1, func(uint64, uint64, []Event) {}); err != nil {
		t.Errorf("the other segment meanwhile: %v", err)
	}
	close(release)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if err := c.w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A panicking callback: the other watchers still get their events, the
// panic comes out of Deliver afterwards, and the world goes on.
func TestPanickingCallback(t *testing.T) {
	const n = 200
	ref := newCrowd(t, Config{Run: RunCaller}, n)
	defer ref.w.Close()
	c := newCrowd(t, Config{Threads: 2, Shards: 4}, n)
	defer c.w.Close()
	for tick := 0; tick < 3; tick++ {
		ref.tick(t)
		c.tick(t)
		want := map[uint64]uint64{}
		if err := ref.w.Deliver(func(watcher, tag uint64, events []Event) {
			want[watcher] = hashEvents(watcher, events)
		}); err != nil {
			t.Fatal(err)
		}
		got := map[uint64]uint64{}
		calls := 0
		deliver := func() (v interface{}) {
			defer func() { v = recover() }()
			_ = c.w.Deliver(func(watcher, tag uint64, events []Event) {
				calls++
				got[watcher] = hashEvents(watcher, events)
				if calls%2 == 1 { // half of them, the first included
					panic("boom")
				}
			})
			return nil
		}
		if v := deliver(); v != "boom" {
			t.Fatalf("tick %d: recovered %v, want boom", tick, v)
		}
		if len(got) != len(want) {
			t.Fatalf("tick %d: %d watchers delivered, want %d", tick, len(got), len(want))
		}
		for id, h := range want {
			if got[id] != h {
				t.Fatalf("tick %d: watcher %d got other events", tick, id)
			}
		}
	}
	// Still usable; nothing left over.
	if err := c.w.Deliver(func(uint64, uint64, []Event) { t.Error("left over") }); err != nil {
		t.Fatal(err)
	}
	c.tick(t)
	calls := 0
	if err := c.w.Deliver(func(uint64, uint64, []Event) { calls++ }); err != nil || calls == 0 {
		t.Fatalf("after the panics: %v, %d calls", err, calls)
	}
	// panic(nil) is a panic too.
	c.tick(t)
	func() {
		panicked := true
		defer func() {
			recover()
			if !panicked {
				t.Error("panic(nil) was swallowed")
			}
		}()
		_ = c.w.Deliver(func(uint64, uint64, []Event) { panic(nil) })
		panicked = false
	}()
	// DeliverSegment re-panics likewise.
	c.tick(t)
	for s := 0; s < c.w.Segments(); s++ {
		func() {
			defer func() {
				if v := recover(); v != nil && v != "seg" {
					t.Errorf("segment %d: %v", s, v)
				}
			}()
			_ = c.w.DeliverSegment(s, func(uint64, uint64, []Event) { panic("seg") })
		}()
	}
	if err := c.w.Tick(); err != nil {
		t.Fatal(err)
	}
}

// Parallel delivery by segment from goroutines gives every watcher the
// same events as one Deliver of an identical world.
func TestParallelDeliverSegment(t *testing.T) {
	const n = 2000
	ref := newCrowd(t, Config{Run: RunCaller}, n)
	defer ref.w.Close()
	c := newCrowd(t, Config{Threads: 2, Shards: 8}, n)
	defer c.w.Close()
	if c.w.Segments() != 2 {
		t.Fatalf("%d segments", c.w.Segments())
	}
	for tick := 0; tick < 10; tick++ {
		ref.tick(t)
		c.tick(t)
		var want []uint64
		if err := ref.w.Deliver(func(watcher, tag uint64, events []Event) {
			if tag != watcher*10 {
				t.Errorf("watcher %d tag %d", watcher, tag)
			}
			want = append(want, hashEvents(watcher, events))
		}); err != nil {
			t.Fatal(err)
		}
		parts := make([][]uint64, c.w.Segments())
		var wg sync.WaitGroup
		for s := range parts {
			wg.Add(1)
			go func(s int) {
				defer wg.Done()
				err := c.w.DeliverSegment(s, func(watcher, tag uint64, events []Event) {
					parts[s] = append(parts[s], hashEvents(watcher, events))
				})
				if err != nil {
					t.Error(err)
				}
			}(s)
		}
		wg.Wait()
		var got []uint64
		for _, p := range parts {
			got = append(got, p...)
		}
		sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		if len(got) != len(want) {
			t.Fatalf("tick %d: %d deliveries, want %d", tick, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("tick %d: deliveries differ", tick)
			}
		}
	}
}

// Host calls from several goroutines at once are refused, not raced.
func TestConcurrentHostCalls(t *testing.T) {
	c := newCrowd(t, Config{Run: RunCaller}, 100)
	defer c.w.Close()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				err := c.w.Move(uint64(i%100+1), float32(g), float32(i))
				if err != nil && !errors.Is(err, ErrBusy) {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestNoAllocations(t *testing.T) {
	c := newCrowd(t, Config{Threads: 2}, 1000)
	defer c.w.Close()
	var sum uint64
	fn := func(watcher, tag uint64, events []Event) {
		for i := range events {
			sum += events[i].ID
		}
	}
	for i := 0; i < 5; i++ { // warm up
		c.tick(t)
		if err := c.w.Deliver(fn); err != nil {
			t.Fatal(err)
		}
	}
	m := c.moves[0]
	report := func(name string, f func()) {
		if a := testing.AllocsPerRun(20, f); a != 0 {
			t.Errorf("%s: %v allocations a run", name, a)
		} else {
			t.Logf("%s: 0 allocations a run", name)
		}
	}
	report("Move", func() { _ = c.w.Move(m.ID, m.X, m.Y) })
	report("MoveMany", func() { _, _ = c.w.MoveMany(c.moves) })
	r, err := c.w.RefOf(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	report("MoveRef", func() { _ = c.w.MoveRef(r, m.X, m.Y) })
	report("MoveMany+Tick+Deliver", func() {
		c.step()
		_, _ = c.w.MoveMany(c.moves)
		_ = c.w.Tick()
		_ = c.w.Deliver(fn)
	})
	report("Tick", func() { _ = c.w.Tick() })
	report("Deliver", func() { _ = c.w.Deliver(fn) })
	report("DeliverSegment", func() { _ = c.w.DeliverSegment(0, fn) })
	if sum == 0 {
		t.Error("no events")
	}
}

func TestFinalizerCloses(t *testing.T) {
	before := atomic.LoadInt64(&openWorlds)
	for i := 0; i < 4; i++ {
		c := newCrowd(t, Config{Threads: 1}, 10)
		c.tick(t)
	}
	// The dropped worlds are closed by their finalizers; this must not
	// crash, and the handles must not keep them alive.
	for i := 0; i < 50 && atomic.LoadInt64(&openWorlds) > before; i++ {
		runtimeGC()
	}
	if n := atomic.LoadInt64(&openWorlds); n > before {
		t.Errorf("%d dropped worlds not closed", n-before)
	}
}

// Worlds on a pool ticked together give the events of worlds ticked
// alone; the pool refuses to close while a world is on it.
func TestPoolTickMany(t *testing.T) {
	pool, err := NewPool(PoolConfig{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if pool.Threads() != 2 {
		t.Errorf("pool threads %d", pool.Threads())
	}
	const k = 3
	var refs, many [k]*crowd
	for i := range refs {
		refs[i] = newCrowd(t, Config{Run: RunCaller}, 300+100*i)
		many[i] = newCrowd(t, Config{Pool: pool}, 300+100*i)
	}
	worlds := []*World{many[0].w, many[1].w, many[2].w}
	results := make([]error, k)
	hash := func(w *World) uint64 {
		var h uint64
		if err := w.Deliver(func(watcher, tag uint64, ev []Event) {
			h += hashEvents(watcher, ev)
		}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	for tick := 0; tick < 5; tick++ {
		for i := range refs {
			refs[i].tick(t)
			many[i].step()
			if _, err := many[i].w.MoveMany(many[i].moves); err != nil {
				t.Fatal(err)
			}
		}
		if err := TickMany(worlds, results); err != nil {
			t.Fatal(err)
		}
		for i := range refs {
			if results[i] != nil {
				t.Errorf("world %d: %v", i, results[i])
			}
			if a, b := hash(refs[i].w), hash(many[i].w); a != b {
				t.Fatalf("tick %d world %d: events differ", tick, i)
			}
		}
	}
	if err := TickMany([]*World{worlds[0], worlds[0]}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("a world twice: %v", err)
	}
	if err := pool.Close(); !errors.Is(err, ErrBusy) {
		t.Errorf("Close of a pool with worlds: %v", err)
	}
	for i := range refs {
		refs[i].w.Close()
		many[i].w.Close()
	}
	if err := TickMany(worlds, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("TickMany of closed worlds: %v", err)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Pool: pool}); !errors.Is(err, ErrClosed) {
		t.Errorf("New on a closed pool: %v", err)
	}
}

// References, the split tick, and delivery by id (Pending, Drain) give
// the events of moves by id, Tick and Deliver on an identical world.
func TestRefsSplitTickDrain(t *testing.T) {
	const n = 500
	ref := newCrowd(t, Config{Run: RunCaller}, n)
	defer ref.w.Close()
	c := newCrowd(t, Config{Threads: 2}, n)
	defer c.w.Close()
	refs := make([]Ref, n)
	for i, m := range c.moves {
		r, err := c.w.RefOf(m.ID)
		if err != nil || r == 0 {
			t.Fatalf("RefOf(%d): %v %v", m.ID, r, err)
		}
		refs[i] = r
	}
	if _, err := c.w.RefOf(n + 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("RefOf unknown: %v", err)
	}
	if err := c.w.MoveRef(0, 1, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("MoveRef(0): %v", err)
	}
	if _, err := c.w.TickPoll(); !errors.Is(err, ErrInvalid) {
		t.Errorf("TickPoll with no tick: %v", err)
	}
	var ids []uint64
	var events []Event
	for tick := 0; tick < 5; tick++ {
		ref.tick(t)
		want := map[uint64]uint64{}
		if err := ref.w.Deliver(func(watcher, tag uint64, ev []Event) {
			want[watcher] = hashEvents(watcher, ev)
		}); err != nil {
			t.Fatal(err)
		}
		c.step()
		for i, m := range c.moves {
			if err := c.w.MoveRef(refs[i], m.X, m.Y); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.w.TickBegin(); err != nil {
			t.Fatal(err)
		}
		if err := c.w.Move(1, 0, 0); !errors.Is(err, ErrBusy) {
			t.Errorf("Move during a tick in flight: %v", err)
		}
		for {
			done, err := c.w.TickPoll()
			if err != nil {
				t.Fatal(err)
			}
			if done {
				break
			}
		}
		if err := c.w.TickEnd(); err != nil {
			t.Fatal(err)
		}
		var err error
		ids, err = c.w.Pending(ids[:0])
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != len(want) || !sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i] < ids[j] }) {
			t.Fatalf("tick %d: %d pending, want %d, ascending", tick, len(ids), len(want))
		}
		for _, id := range ids {
			events, err = c.w.Drain(id, events[:0])
			if err != nil {
				t.Fatal(err)
			}
			if hashEvents(id, events) != want[id] {
				t.Fatalf("tick %d: watcher %d drained other events", tick, id)
			}
		}
		if err := c.w.Deliver(func(uint64, uint64, []Event) { t.Error("delivered twice") }); err != nil {
			t.Fatal(err)
		}
	}
}
