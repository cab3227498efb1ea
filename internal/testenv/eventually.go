package testenv

import (
	"testing"
	"time"
)

// Pauses between two looks of Poll: short at first, so that a condition
// that holds soon is seen soon, and longer later, so that a slow look (a
// rabbitmqctl call, a management API request) is not run back to back.
const (
	firstPause = 5 * time.Millisecond
	lastPause  = 100 * time.Millisecond
)

// Poll looks at cond until it holds or within has passed, and reports whether
// it held. It is for state that sends no event a test could wait on: a real
// broker's queue depth, a row in a real database, a service's HTTP answer.
// Inside a testing/synctest bubble its pauses run on the bubble's clock.
func Poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	pause := time.NewTimer(firstPause)
	defer pause.Stop()
	for wait := firstPause; ; wait = min(2*wait, lastPause) {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		pause.Reset(min(wait, time.Until(deadline)))
		<-pause.C
	}
}

// Eventually fails the test, saying how long it waited for what, unless cond
// holds within the bound; see Poll.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("waited %s for %s", within, what)
	}
}
