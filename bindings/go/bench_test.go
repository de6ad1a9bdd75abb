package aoi

import "testing"

// The hot paths on a crowd of 5,000 watcher-markers (about 30 neighbours
// each), two lanes.

func benchCrowd(b *testing.B) *crowd {
	c := newCrowd(b, Config{Threads: 2}, 5000)
	b.Cleanup(func() { c.w.Close() })
	for i := 0; i < 3; i++ {
		c.tick(b)
		if err := c.w.Deliver(func(uint64, uint64, []Event) {}); err != nil {
			b.Fatal(err)
		}
	}
	return c
}

func BenchmarkMove(b *testing.B) {
	c := benchCrowd(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := &c.moves[i%len(c.moves)]
		if err := c.w.Move(m.ID, m.X, m.Y); err != nil {
			b.Fatal(err)
		}
	}
}

// A move of MoveMany: b.N moves in batches of the whole crowd.
func BenchmarkMoveMany(b *testing.B) {
	c := benchCrowd(b)
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; left -= len(c.moves) {
		n := len(c.moves)
		if left < n {
			n = left
		}
		if _, err := c.w.MoveMany(c.moves[:n]); err != nil {
			b.Fatal(err)
		}
	}
}

// One tick after the whole crowd moved (the moves not timed).
func BenchmarkTick(b *testing.B) {
	c := benchCrowd(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c.step()
		if _, err := c.w.MoveMany(c.moves); err != nil {
			b.Fatal(err)
		}
		if err := c.w.Deliver(func(uint64, uint64, []Event) {}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := c.w.Tick(); err != nil {
			b.Fatal(err)
		}
	}
}

// One tick's delivery, every event read (the tick not timed).
func BenchmarkDeliver(b *testing.B) {
	c := benchCrowd(b)
	var sum uint64
	events := 0
	fn := func(watcher, tag uint64, ev []Event) {
		for i := range ev {
			sum += ev[i].ID
		}
		events += len(ev)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c.tick(b)
		b.StartTimer()
		if err := c.w.Deliver(fn); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// The same, a goroutine per segment.
func BenchmarkDeliverSegments(b *testing.B) {
	c := benchCrowd(b)
	n := c.w.Segments()
	sums := make([]struct {
		sum uint64
		_   [56]byte
	}, n)
	fns := make([]DeliverFunc, n)
	for s := range fns {
		s := s
		fns[s] = func(watcher, tag uint64, ev []Event) {
			for i := range ev {
				sums[s].sum += ev[i].ID
			}
		}
	}
	done := make(chan error, n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c.tick(b)
		b.StartTimer()
		for s := 1; s < n; s++ {
			go func(s int) { done <- c.w.DeliverSegment(s, fns[s]) }(s)
		}
		if err := c.w.DeliverSegment(0, fns[0]); err != nil {
			b.Fatal(err)
		}
		for s := 1; s < n; s++ {
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	}
}
