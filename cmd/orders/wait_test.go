package main

import (
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
)

// eventually looks (testenv.Poll) until look says the wait is over, and fails
// the test after bound, saying what it waited for and what the last look saw.
// look returns whether the wait is over and, while it is not, what it saw.
// The service runs for real and tells no event for what a test waits on (a
// row, an HTTP answer, a log line): it can only be looked at.
func eventually(t *testing.T, bound time.Duration, what string, look func() (done bool, saw string)) {
	t.Helper()
	var saw string
	if !testenv.Poll(bound, func() bool {
		var done bool
		done, saw = look()
		return done
	}) {
		t.Fatalf("waited %s for %s: %s", bound, what, saw)
	}
}
