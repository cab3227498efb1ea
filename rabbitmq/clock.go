package rabbitmq

import (
	"sync"
	"time"
)

// clock is the transport's time source: it stamps outgoing messages and arms the
// broker timeout on each wait. The package's tests replace it to expire waits
// deterministically.
type clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless stop is
	// called first; stop reports whether it prevented the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// deadline is a timer that closes C when it expires.
type deadline struct {
	C    chan struct{}
	stop func() bool
}

func newDeadline(clock clock, d time.Duration) deadline {
	c := make(chan struct{})
	var once sync.Once
	stop := clock.AfterFunc(d, func() { once.Do(func() { close(c) }) })
	return deadline{C: c, stop: stop}
}

// Stop releases the timer.
func (d deadline) Stop() { d.stop() }

// expiry calls onExpire once when the bound passes before Stop.
type expiry struct {
	mu      sync.Mutex
	expired bool
	stopped bool
	stop    func() bool
}

func newExpiry(clock clock, d time.Duration, onExpire func()) *expiry {
	e := &expiry{}
	e.stop = clock.AfterFunc(d, func() {
		e.mu.Lock()
		if e.stopped {
			e.mu.Unlock()
			return
		}
		e.expired = true
		e.mu.Unlock()
		onExpire()
	})
	return e
}

// Stop disarms the bound and reports whether it had already expired.
func (e *expiry) Stop() bool {
	e.stop()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopped = true
	return e.expired
}
