package main

import (
	"fmt"
	"time"
)

// handoffRounds is how many hand-offs handoffLatency times.
const handoffRounds = 2000

// handoffLatency times handing a value to a goroutine parked on a channel
// and getting it back, with a pause between rounds so that the other
// goroutine parks each time, as it does between the messages of a request
// and its reply: what one extra goroutine on a message's path costs on this
// machine (half the round trip, each way one wake-up). It returns the p50
// and p99 of one hand-off.
func handoffLatency() (p50, p99 time.Duration) {
	to, back := make(chan time.Time, 1), make(chan time.Time, 1)
	go func() {
		for v := range to {
			back <- v
		}
	}()
	defer close(to)
	latencies := make([]time.Duration, 0, handoffRounds)
	for range handoffRounds {
		start := time.Now()
		to <- start
		<-back
		latencies = append(latencies, time.Since(start)/2)
		// Busy, not asleep, for 100 µs: the other goroutine parks and its
		// thread goes idle, while this one keeps its own.
		for pause := time.Now(); time.Since(pause) < 100*time.Microsecond; {
		}
	}
	return percentile(latencies, 0.50), percentile(latencies, 0.99)
}

// printHandoffs prints what a hand-off costs here beside how many more of
// them a message makes through ours than through the raw client, so a
// latency ratio can be read against what the extra goroutines cost.
func printHandoffs(scenario string, extra int, where string) {
	p50, p99 := handoffLatency()
	fmt.Printf("# %s: a hand-off to a parked goroutine here takes p50 %s, p99 %s; ours makes %d more per message than raw (%s)\n",
		scenario, p50.Round(100*time.Nanosecond), p99.Round(100*time.Nanosecond), extra, where)
}
