package aoi_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"aoi"
	"aoi/internal/opsfile"
)

// crowdOps finds the crowd of aoi-bench: AOI_OPS (a --dump-ops file) and
// AOI_OPS_JSON (that run's --json output), or AOI_BENCH (the aoi-bench
// binary), which is run here. test.sh sets AOI_BENCH.
func crowdOps(t *testing.T) (*opsfile.File, string) {
	ops, out := os.Getenv("AOI_OPS"), os.Getenv("AOI_OPS_JSON")
	var js []byte
	var err error
	if ops != "" && out != "" {
		js, err = os.ReadFile(out)
	} else if bench := os.Getenv("AOI_BENCH"); bench != "" {
		ops = filepath.Join(t.TempDir(), "crowd.ops")
		js, err = exec.Command(bench, "--entities", "1000", "--ticks", "10",
			"--threads", "1", "--no-baseline", "--json", "--dump-ops",
			ops).Output()
	} else {
		t.Skip("set AOI_BENCH (or AOI_OPS and AOI_OPS_JSON); test.sh does")
	}
	if err != nil {
		t.Fatal(err)
	}
	var result struct {
		Checksum string `json:"checksum"`
	}
	if err := json.Unmarshal(js, &result); err != nil {
		t.Fatal(err)
	}
	f, err := opsfile.Load(ops)
	if err != nil {
		t.Fatal(err)
	}
	return f, result.Checksum
}

// Replays aoi-bench's crowd through the binding, every tick delivered,
// and checks aoi-bench's checksum: with one lane and Deliver, and with
// two lanes and a goroutine per segment.
func TestCrowdChecksum(t *testing.T) {
	f, want := crowdOps(t)
	for _, threads := range []uint{1, 2} {
		w, err := aoi.New(f.Config(threads))
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]struct {
			sum uint64
			_   [56]byte // a cache line each
		}, w.Segments())
		sum := opsfile.Seed // aoi-bench's sum starts at the seed
		for tick := range f.Ticks {
			if err := f.Submit(w, tick); err != nil {
				t.Fatal(err)
			}
			if err := w.Tick(); err != nil {
				t.Fatal(err)
			}
			if threads == 1 {
				err = w.Deliver(func(watcher, tag uint64, events []aoi.Event) {
					sum += opsfile.HashOutbox(opsfile.Seed, watcher, events)
				})
				if err != nil {
					t.Fatal(err)
				}
				continue
			}
			var wg sync.WaitGroup
			for s := range parts {
				wg.Add(1)
				go func(s int) {
					defer wg.Done()
					err := w.DeliverSegment(s, func(watcher, tag uint64, events []aoi.Event) {
						parts[s].sum += opsfile.HashOutbox(opsfile.Seed, watcher, events)
					})
					if err != nil {
						t.Error(err)
					}
				}(s)
			}
			wg.Wait()
		}
		for _, p := range parts {
			sum += p.sum
		}
		if got := fmt.Sprintf("%016x", sum); got != want {
			t.Errorf("threads %d: checksum %s, aoi-bench %s", threads, got, want)
		} else {
			t.Logf("threads %d: checksum %s matches aoi-bench", threads, got)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
