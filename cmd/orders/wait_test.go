package main

import (
	"testing"
	"time"
)

// eventually looks, every pace, until look says the wait is over, and fails
// the test after bound, saying what it waited for and what the last look saw.
// look returns whether the wait is over and, while it is not, what it saw.
func eventually(t *testing.T, bound, pace time.Duration, what string, look func() (done bool, saw string)) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		done, saw := look()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: %s", bound, what, saw)
		}
		// The service runs for real and tells no event for what a test waits
		// on (a row, an HTTP answer, a log line): it can only be looked at.
		time.Sleep(pace)
	}
}
