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

// writeBound is the broker timeout of one write, armed once for all of its
// publishes and confirm waits (a timer per publish cost an allocation or more
// per message): C closes when it passes, and a basic.publish still under way
// then, in the socket or waiting for the socket, is ended by severing the
// connection, the only way to make a pending amqp091 call return. A write
// therefore never waits on the broker longer than the broker timeout.
type writeBound struct {
	C     chan struct{}
	stop  func() bool
	conn  *connection
	op    string
	mu    sync.Mutex
	ended bool // the bound has passed
	busy  bool // a broker call of the write is under way
}

func newWriteBound(conn *connection, op string) *writeBound {
	b := &writeBound{C: make(chan struct{}), conn: conn, op: op}
	b.stop = conn.config.clock.AfterFunc(conn.config.brokerTimeout, b.expire)
	return b
}

func (b *writeBound) expire() {
	b.mu.Lock()
	b.ended = true
	busy := b.busy
	b.mu.Unlock()
	close(b.C)
	if busy {
		b.conn.sever(b.op)
	}
}

// enter marks a broker call begun; it reports false, and marks nothing, when
// the bound has already passed.
func (b *writeBound) enter() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return false
	}
	b.busy = true
	return true
}

// leave marks the call entered last as ended and reports whether the bound
// passed while it was under way, which severed the connection.
func (b *writeBound) leave() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.busy = false
	return b.ended
}

// Stop releases the timer.
func (b *writeBound) Stop() { b.stop() }

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
