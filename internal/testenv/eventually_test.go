package testenv

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestPollReportsAConditionThatComesToHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := time.Now()
		held := Poll(time.Minute, func() bool { return time.Since(started) >= time.Second })
		if !held {
			t.Fatal("Poll reported false for a condition that held after a second")
		}
		if took := time.Since(started); took > time.Second+lastPause {
			t.Fatalf("Poll saw the condition %s after it held; want at most %s", took-time.Second, lastPause)
		}
	})
}

func TestPollGivesUpAtItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := time.Now()
		if Poll(time.Minute, func() bool { return false }) {
			t.Fatal("Poll reported true for a condition that never held")
		}
		if took := time.Since(started); took != time.Minute {
			t.Fatalf("Poll gave up after %s; want exactly its bound, 1m0s", took)
		}
	})
}
