package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// memProfileRate samples one allocation per this many bytes while a memory
// profile is asked for: fine enough to see the small per-message objects.
const memProfileRate = 4096

// startMemProfile samples allocations from now on and, at stop, writes
// them to path (go tool pprof -sample_index=alloc_objects). Allocations are
// not labelled by side: read them by function (our packages, amqp091-go,
// encoding/json).
func startMemProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create the memory profile: %w", err)
	}
	runtime.MemProfileRate = memProfileRate
	return func() {
		runtime.GC() // the profile counts what the last collection saw
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			fmt.Fprintln(os.Stderr, "bench: write the memory profile:", err)
		}
		_ = f.Close()
	}, nil
}
