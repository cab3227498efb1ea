package transporttest

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestingT is the part of a gunit fixture's T the bubble helpers use; its
// value must be the *testing.T of the running test.
type TestingT interface {
	Helper()
}

// InBubble runs a fixture's setup, test and teardown in a testing/synctest
// bubble, where time moves only when every goroutine of the bubble is
// blocked: a broker timeout or a message's TTL passes as soon as nothing else
// can happen first, at once in real time, and a test can say exactly how long
// a wait took. Setup runs again inside, since what the bubble uses must be
// made there; the fixture's fields are put back afterwards, for the teardown
// of what the fixture's own Setup made outside.
func InBubble[F any](t TestingT, fixture *F, setup, teardown, test func()) {
	t.Helper()
	outer := *fixture
	synctest.Test(t.(*testing.T), func(*testing.T) {
		setup()
		defer teardown()
		test()
	})
	*fixture = outer
}

// Pass lets d go by on the bubble's clock: timers due meanwhile fire while
// the caller waits. (time.Sleep in a bubble moves the bubble's clock, not
// real time.)
func Pass(d time.Duration) { time.Sleep(d) }
