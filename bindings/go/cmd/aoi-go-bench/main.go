// Command aoi-go-bench replays a crowd that aoi-bench --dump-ops wrote
// through the Go binding and times it as aoi-bench times its frames: per
// tick, the moves (MoveMany), Tick, and the delivery of every segment (a
// goroutine each), every event read into aoi-bench's checksum. The first
// tick, aoi-bench's warm-up, is not timed. It prints the median frame in
// ms and the checksum, which must equal aoi-bench's (bench.sh compares),
// and the Go heap allocations a timed tick (runtime.MemStats.Mallocs).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"time"

	"aoi"
	"aoi/internal/opsfile"
)

func main() {
	ops := flag.String("ops", "", "the --dump-ops file of aoi-bench")
	threads := flag.Uint("threads", 2, "lanes (aoi_config.threads)")
	warmup := flag.Int("warmup", 1, "ticks not timed (aoi-bench --warmup)")
	flag.Parse()
	if *ops == "" {
		fmt.Fprintln(os.Stderr, "usage: aoi-go-bench -ops FILE [-threads N]")
		os.Exit(2)
	}
	if err := run(*ops, *threads, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "aoi-go-bench:", err)
		os.Exit(1)
	}
}

// part is one segment's share of the checksum, on a cache line of its own.
type part struct {
	sum    uint64
	events uint64
	_      [48]byte
}

func run(path string, threads uint, warmup int) error {
	f, err := opsfile.Load(path)
	if err != nil {
		return err
	}
	w, err := aoi.New(f.Config(threads))
	if err != nil {
		return err
	}
	defer w.Close()

	n := w.Segments()
	parts := make([]part, n)
	fns := make([]aoi.DeliverFunc, n)
	for s := range fns {
		p := &parts[s]
		fns[s] = func(watcher, tag uint64, events []aoi.Event) {
			p.sum += opsfile.HashOutbox(opsfile.Seed, watcher, events)
			p.events += uint64(len(events))
		}
	}
	// A delivery goroutine for each segment but the first, which the
	// host's goroutine delivers itself.
	start := make([]chan struct{}, n)
	done := make(chan error, n)
	for s := 1; s < n; s++ {
		start[s] = make(chan struct{})
		go func(s int) {
			for range start[s] {
				done <- w.DeliverSegment(s, fns[s])
			}
		}(s)
	}
	defer func() {
		for s := 1; s < n; s++ {
			close(start[s])
		}
	}()

	frames := make([]float64, 0, len(f.Ticks))
	var ms runtime.MemStats
	var mallocs uint64
	for tick := range f.Ticks {
		if tick == warmup {
			runtime.ReadMemStats(&ms)
			mallocs = ms.Mallocs
		}
		t0 := time.Now()
		if err := f.Submit(w, tick); err != nil {
			return err
		}
		if err := w.Tick(); err != nil {
			return err
		}
		for s := 1; s < n; s++ {
			start[s] <- struct{}{}
		}
		err := w.DeliverSegment(0, fns[0])
		for s := 1; s < n; s++ {
			if e := <-done; e != nil && err == nil {
				err = e
			}
		}
		if err != nil {
			return err
		}
		if tick >= warmup {
			frames = append(frames, float64(time.Since(t0).Nanoseconds())/1e6)
		}
	}
	runtime.ReadMemStats(&ms)
	allocs := 0.0
	if len(frames) > 0 {
		allocs = float64(ms.Mallocs-mallocs) / float64(len(frames))
	}
	sum, events := opsfile.Seed, uint64(0)
	for _, p := range parts {
		sum += p.sum
		events += p.events
	}
	sort.Float64s(frames)
	median := 0.0 // nearest rank, as aoi-bench's quantile()
	if k := len(frames); k > 0 {
		median = frames[(k+1)/2-1]
	}
	fmt.Printf("frame_ms_median %.4f\nchecksum %016x\nticks %d\nevents %d\n"+
		"segments %d\ngo_allocs_per_tick %.2f\n",
		median, sum, len(f.Ticks), events, n, allocs)
	return nil
}
