package rabbitmq

import (
	"sync"
	"time"
)

// bound is the broker timeout of one wait, the transport's one timer shape:
// when it passes before Stop, Done's channel closes and then onExpire, if
// any, runs (it severs the connection, the only way to make a pending amqp091
// call return, or cancels a dial). A call bounded as a whole, a wait on a
// channel and a write whose publishes it bounds together all use it.
type bound struct {
	timer    *time.Timer
	onExpire func()

	mu      sync.Mutex
	done    chan struct{} // made on the first Done
	passed  bool
	stopped bool
}

// newBound arms a bound of d.
func newBound(d time.Duration, onExpire func()) *bound {
	b := &bound{}
	b.arm(d, onExpire)
	return b
}

// arm starts b's timer; for a bound kept inside another value.
func (b *bound) arm(d time.Duration, onExpire func()) {
	b.onExpire = onExpire
	b.timer = time.AfterFunc(d, b.expire)
}

func (b *bound) expire() {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	b.passed = true
	if b.done != nil {
		close(b.done)
	}
	b.mu.Unlock()
	if b.onExpire != nil {
		b.onExpire()
	}
}

// Done returns a channel that is closed when the bound passes.
func (b *bound) Done() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = make(chan struct{})
		if b.passed {
			close(b.done)
		}
	}
	return b.done
}

// Passed reports whether the bound has passed.
func (b *bound) Passed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.passed
}

// Stop disarms the bound and reports whether it had passed already, in which
// case onExpire has run or is running.
func (b *bound) Stop() bool {
	b.timer.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	return b.passed
}

// writeBound is the broker timeout of one write, armed once for all of its
// publishes and confirm waits (a timer per publish cost an allocation or more
// per message). When it passes while a basic.publish of the write is under
// way, in the socket or waiting for the socket, the connection is severed, so
// a write never waits on the broker longer than the broker timeout.
type writeBound struct {
	bound
	conn *connection
	op   string

	mu   sync.Mutex
	busy bool // a broker call of the write is under way
}

func newWriteBound(conn *connection, op string) *writeBound {
	w := &writeBound{conn: conn, op: op}
	w.arm(conn.config.brokerTimeout, w.expire)
	return w
}

// expire runs once the bound has passed.
func (w *writeBound) expire() {
	w.mu.Lock()
	busy := w.busy
	w.mu.Unlock()
	if busy {
		w.conn.sever(w.op)
	}
}

// enter marks a broker call begun; it reports false, and marks nothing, when
// the bound has already passed.
func (w *writeBound) enter() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.Passed() {
		return false
	}
	w.busy = true
	return true
}

// leave marks the call entered last as ended and reports whether the bound
// passed while it was under way, which severed the connection.
func (w *writeBound) leave() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy = false
	return w.Passed()
}
