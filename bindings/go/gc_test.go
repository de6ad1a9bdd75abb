package aoi

import (
	"runtime"
	"time"
)

func runtimeGC() {
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
}
