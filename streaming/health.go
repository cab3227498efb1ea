package streaming

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warrenmq/messaging/internal/redact"
)

// ErrWaitingOnOutage is what Consumer.Health wraps when a subscription is
// waiting on an outage.
var ErrWaitingOnOutage = errors.New("streaming: a subscription is waiting on an outage; its messages are held unacknowledged until the dependency answers")

// Outage describes one subscription that is waiting on an outage: its
// handler's failures are a dependency's (messaging.IsOutage), so it holds its
// messages unacknowledged, spending no retry budget and dead-lettering
// nothing, until the dependency answers.
type Outage struct {
	// Stream is the subscription's queue.
	Stream string
	// Since is when the subscription started waiting.
	Since time.Time
	// Cause is the latest failure's text, with any credentials masked.
	Cause string
}

// String words the wait for a log line or a health report.
func (o Outage) String() string {
	return fmt.Sprintf("stream %s waiting since %s: %s", o.Stream, o.Since.UTC().Format(time.RFC3339), o.Cause)
}

// health is one subscription's view of outages: the workers whose handler
// (handlers/retry) holds its batch through an outage, reported through the
// handler's context, and the hold the runtime keeps after a handler panicked
// with an outage until a batch is handled again.
type health struct {
	stream  string
	monitor Monitor
	logger  *slog.Logger

	mu       sync.Mutex
	workers  map[*workerListener]waitSpan
	held     *waitSpan
	since    time.Time
	cause    error
	stopping bool
	// heldFlag mirrors held != nil, so a handled batch checks it without the lock.
	heldFlag atomic.Bool
}

// waitSpan is one wait on an outage: since when, and the latest cause.
type waitSpan struct {
	since time.Time
	cause error
}

func newHealth(stream string, cfg config) *health {
	return &health{stream: stream, monitor: cfg.monitor, logger: cfg.logger, workers: map[*workerListener]waitSpan{}}
}

// workerWaiting records that a worker's handler holds its batch because of
// cause. After shutdown began it cancels the worker's handler at once: a
// batch held through an outage has nothing to finish.
func (h *health) workerWaiting(worker *workerListener, cause error) {
	h.change(func() []*workerListener {
		if h.stopping || isClosed(worker.sessionFailed) {
			return []*workerListener{worker}
		}
		w, ok := h.workers[worker]
		if !ok {
			w.since = time.Now()
		}
		w.cause = cause
		h.workers[worker] = w
		h.cause = cause
		return nil
	})
}

func (h *health) workerResumed(worker *workerListener) {
	h.change(func() []*workerListener {
		delete(h.workers, worker)
		return nil
	})
}

// outagePanic records that a handler panicked with an outage: the runtime
// holds the subscription (its session ends and the broker redelivers) until a
// batch is handled again.
func (h *health) outagePanic(cause error) {
	h.change(func() []*workerListener {
		if h.held == nil {
			h.held = &waitSpan{since: time.Now()}
		}
		h.held.cause = cause
		h.cause = cause
		h.heldFlag.Store(true)
		return nil
	})
}

// batchConcluded ends the runtime's hold: a batch was handled, or failed in a
// way that is its own.
func (h *health) batchConcluded() {
	if !h.heldFlag.Load() {
		return
	}
	h.change(func() []*workerListener {
		h.held = nil
		h.heldFlag.Store(false)
		return nil
	})
}

// sessionFailed cancels every worker waiting on an outage: its session ended
// (the stream was lost, a handler panicked, an acknowledgement failed), so
// the batch it holds cannot be acknowledged and the broker redelivers it to
// the next session. The caller closed the session's failed channel first, so
// a worker that starts waiting later is cancelled by workerWaiting.
func (h *health) sessionFailed() {
	h.change(h.takeWorkers)
}

// stop begins shutdown: every worker waiting on an outage is cancelled, and so
// is any that starts waiting later; the subscription no longer reports a wait.
func (h *health) stop() {
	h.change(func() []*workerListener {
		h.stopping = true
		h.held = nil
		h.heldFlag.Store(false)
		return h.takeWorkers()
	})
}

// change is every update of the subscription's state: mutate runs under the
// lock and returns the workers to cancel; once the lock is released they are
// cancelled and the transition it caused, if any, is reported.
func (h *health) change(mutate func() []*workerListener) {
	h.mu.Lock()
	cancel := mutate()
	report := h.transition()
	h.mu.Unlock()
	for _, worker := range cancel {
		worker.cancel()
	}
	report()
}

// takeWorkers forgets every waiting worker and returns them. The caller holds
// h.mu.
func (h *health) takeWorkers() []*workerListener {
	workers := slices.Collect(maps.Keys(h.workers))
	clear(h.workers)
	return workers
}

// transition notes a change between waiting and not; it returns the
// monitor call and log line to make once the lock is released.
func (h *health) transition() func() {
	waiting := !h.stopping && (len(h.workers) > 0 || h.held != nil)
	switch {
	case waiting && h.since.IsZero():
		h.since = time.Now()
		cause := h.cause
		return func() {
			h.monitor.OutageStarted(h.stream, cause)
			h.logger.Warn(fmt.Sprintf("Subscription to stream [%s] is waiting on an outage [%s]; its messages are held unacknowledged, without spending their retry budget, until the dependency answers.", h.stream, redact.Text(cause.Error())),
				slog.String("stream", h.stream), slog.String("error", redact.Text(cause.Error())))
		}
	case !waiting && !h.since.IsZero():
		waited := time.Since(h.since)
		h.since = time.Time{}
		stopping := h.stopping
		return func() {
			h.monitor.OutageEnded(h.stream, waited)
			if !stopping {
				h.logger.Info(fmt.Sprintf("Subscription to stream [%s] is no longer waiting on an outage, after [%s].", h.stream, waited.Round(time.Millisecond)),
					slog.String("stream", h.stream), slog.Duration("waited", waited))
			}
		}
	default:
		return func() {}
	}
}

// snapshot returns the subscription's wait, if it is waiting.
func (h *health) snapshot() (Outage, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.since.IsZero() {
		return Outage{}, false
	}
	cause := ""
	if h.cause != nil {
		cause = redact.Text(h.cause.Error())
	}
	return Outage{Stream: h.stream, Since: h.since, Cause: cause}, true
}

// workerListener is one worker's messaging.OutageListener for one session: it tells
// the subscription's health, and can cancel the worker's handler context.
type workerListener struct {
	health *health
	cancel context.CancelFunc
	// sessionFailed is the worker's session's failed channel: once the
	// session has failed, its deliveries go back to the broker whatever the
	// worker does, so waiting on an outage for them is pointless.
	sessionFailed <-chan struct{}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (l *workerListener) Waiting(cause error, _ time.Duration) { l.health.workerWaiting(l, cause) }
func (l *workerListener) Resumed()                             { l.health.workerResumed(l) }

// Waiting lists the subscriptions that are waiting on an outage right now,
// in the order they were configured: each holds its messages unacknowledged,
// spending no retry budget and dead-lettering nothing, until the dependency
// answers (see Outage). It is empty when none is, before Listen, and once
// Close began. Safe to call from any goroutine at any time, for example from
// a readiness or /status endpoint; it takes no lock a handler holds.
func (c *Consumer) Waiting() []Outage {
	if c.soft == nil || c.soft.Err() != nil {
		return nil
	}
	var waiting []Outage
	for _, h := range c.healths {
		if o, ok := h.snapshot(); ok {
			waiting = append(waiting, o)
		}
	}
	return waiting
}

// Health returns nil when no subscription is waiting on an outage, or an
// error wrapping ErrWaitingOnOutage that names each waiting subscription,
// since when, and why (credentials masked): for a readiness check that should
// fail while a dependency the handlers need is down. See Waiting.
func (c *Consumer) Health() error {
	waiting := c.Waiting()
	if len(waiting) == 0 {
		return nil
	}
	described := make([]string, len(waiting))
	for i, o := range waiting {
		described[i] = o.String()
	}
	slices.Sort(described)
	return fmt.Errorf("%w: %s", ErrWaitingOnOutage, strings.Join(described, "; "))
}
