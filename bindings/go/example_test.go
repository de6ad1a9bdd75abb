package aoi_test

import (
	"fmt"
	"sync"

	"aoi"
)

// A host's loop: submit, tick, deliver, query.
func Example() {
	w, err := aoi.New(aoi.Config{Run: aoi.RunCaller})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	all := uint32(aoi.AllLayers)
	w.Add(aoi.Entity{ID: 1, Tag: 100, X: 0, Y: 0, Radius: 10,
		Flags: aoi.Watcher | aoi.Marker, Layers: all, Interest: all})
	w.Add(aoi.Entity{ID: 2, Tag: 200, X: 5, Y: 0, Radius: 10,
		Flags: aoi.Marker, Layers: all, Interest: all})
	for tick := 0; tick < 2; tick++ {
		if tick == 1 {
			w.Move(2, 6, 1)
		}
		if err := w.Tick(); err != nil {
			panic(err)
		}
		// events is the engine's memory: use or copy it before returning.
		w.Deliver(func(watcher, tag uint64, events []aoi.Event) {
			for _, e := range events {
				fmt.Printf("tick %d: watcher %d (tag %d): kind %d of %d at (%g, %g)\n",
					e.Tick, watcher, tag, e.Kind, e.ID, e.X, e.Y)
			}
		})
	}
	view, _ := w.View(1, nil)
	fmt.Println("view of 1:", view)
	// Output:
	// tick 1: watcher 1 (tag 100): kind 1 of 2 at (5, 0)
	// tick 2: watcher 1 (tag 100): kind 2 of 2 at (6, 1)
	// view of 1: [2]
}

// Moving a whole crowd with one call: MoveMany reads the slice in place.
func ExampleWorld_MoveMany() {
	w, _ := aoi.New(aoi.Config{Run: aoi.RunCaller})
	defer w.Close()
	moves := make([]aoi.Move, 3)
	for i := range moves {
		moves[i] = aoi.Move{ID: uint64(i), X: float32(i), Y: 0}
		w.Add(aoi.Entity{ID: uint64(i), Flags: aoi.Marker, X: 0, Y: 0})
	}
	done, err := w.MoveMany(moves)
	fmt.Println(done, err)
	moves[1].ID = 99 // not live: the moves before it stand
	done, err = w.MoveMany(moves)
	fmt.Println(done, err)
	// Output:
	// 3 <nil>
	// 1 AOI_ENOENT: no such entity
}

// Delivering the segments from one goroutine each.
func ExampleWorld_DeliverSegment() {
	w, _ := aoi.New(aoi.Config{Threads: 2})
	defer w.Close()
	for i := 0; i < 100; i++ {
		w.Add(aoi.Entity{ID: uint64(i), X: float32(i % 10), Y: float32(i / 10),
			Radius: 3, Flags: aoi.Watcher | aoi.Marker, Layers: 1, Interest: 1})
	}
	w.Tick()
	counts := make([]int, w.Segments()) // one per segment: no sharing
	var wg sync.WaitGroup
	for s := range counts {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			w.DeliverSegment(s, func(watcher, tag uint64, events []aoi.Event) {
				counts[s] += len(events)
			})
		}(s)
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	fmt.Println(w.Segments(), "segments,", total, "enter events")
	// Output:
	// 2 segments, 2116 enter events
}
