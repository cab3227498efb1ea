package deadletter

import (
	"errors"
	"fmt"
	"strings"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// UnsettledError is what the decorator panics with when the settlement of
// some deliveries of a batch could not be completed (a set-aside copy, a
// retry or an in-progress republish that could not be published, a wait it
// could not hold) while every other delivery of the batch was handled or set
// aside. Those others may be acknowledged; the ones listed must not be. The
// streaming runtime returns each listed delivery to its queue alone
// (messaging.Requeuer) and goes on, so one failed republish redelivers one
// message; without that capability it ends the session, and the broker
// redelivers every unacknowledged delivery. Anyone else who recovers it
// should acknowledge nothing of the batch.
type UnsettledError struct {
	// Deliveries are the deliveries whose settlement failed, in the order
	// they failed.
	Deliveries []messaging.Delivery
	// Err joins why, one error per delivery.
	Err error
}

// Error names how many deliveries were not settled and why.
func (e *UnsettledError) Error() string {
	ids := make([]string, len(e.Deliveries))
	for i, delivery := range e.Deliveries {
		ids[i] = wire.Shorten(delivery.MessageID)
	}
	return fmt.Sprintf("deadletter: the settlement of %d delivery(ies) (%s) could not be completed, so they must not be acknowledged; every other delivery of the batch was handled or set aside: %v",
		len(e.Deliveries), strings.Join(ids, ", "), e.Err)
}

// Unwrap returns the failures.
func (e *UnsettledError) Unwrap() error { return e.Err }

// Holds reports whether delivery (its delivery tag and message id) is one of
// those whose settlement failed.
func (e *UnsettledError) Holds(delivery messaging.Delivery) bool {
	for _, d := range e.Deliveries {
		if keyOf(d) == keyOf(delivery) {
			return true
		}
	}
	return false
}

// unsettled is one delivery whose settlement failed.
type unsettled struct {
	delivery messaging.Delivery
	err      error
}

// markFailed records that delivery's settlement failed with err; the first
// failure of a delivery is kept.
func (c *call) markFailed(delivery messaging.Delivery, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.failures {
		if keyOf(f.delivery) == keyOf(delivery) {
			return
		}
	}
	c.failures = append(c.failures, unsettled{delivery: delivery, err: err})
}

// isFailed reports whether delivery's settlement failed in this Handle.
func (c *call) isFailed(delivery messaging.Delivery) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.failures {
		if keyOf(f.delivery) == keyOf(delivery) {
			return true
		}
	}
	return false
}

// failedWith reports whether value, a recovered panic, is (or wraps) a
// settlement failure recorded here: the handler stopped because a
// settlement it asked for failed, not for a failure of its own.
func (c *call) failedWith(value any) bool {
	err, ok := value.(error)
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.failures {
		if errors.Is(err, f.err) {
			return true
		}
	}
	return false
}

// adopt records the failures of an inner settlement decorator that handled
// the batch, when value is its UnsettledError, and reports whether it was.
func (c *call) adopt(value any) bool {
	err, ok := value.(error)
	var inner *UnsettledError
	if !ok || !errors.As(err, &inner) {
		return false
	}
	for i, delivery := range inner.Deliveries {
		cause := inner.Err
		if joined, ok := inner.Err.(interface{ Unwrap() []error }); ok && i < len(joined.Unwrap()) {
			cause = joined.Unwrap()[i]
		}
		c.markFailed(delivery, cause)
	}
	return true
}

// mustNotHaveFailed panics with an *UnsettledError when a settlement failed
// in this Handle, so those deliveries are not acknowledged even if the inner
// handler ignored the error.
func (c *call) mustNotHaveFailed() {
	c.mu.Lock()
	failures := append([]unsettled(nil), c.failures...)
	c.mu.Unlock()
	if len(failures) == 0 {
		return
	}
	err := &UnsettledError{Deliveries: make([]messaging.Delivery, len(failures))}
	errs := make([]error, len(failures))
	for i, f := range failures {
		err.Deliveries[i], errs[i] = f.delivery, f.err
	}
	err.Err = errors.Join(errs...)
	panic(err)
}

// PartlySettledError is what the decorator panics with when a batch ends
// early (an outage, or the end of the handler's context) after some of its
// deliveries were already settled for good: a copy set aside and confirmed
// by the broker, or a message the handler completed when it was run alone.
// Those may be acknowledged, and should be: redelivered, a set-aside message
// would be set aside a second time, and a completed one handled again. Every
// other delivery of the batch must not be acknowledged. It wraps the cause,
// so messaging.IsOutage and errors.Is see through it; the streaming runtime
// acknowledges the listed deliveries and then ends the session as the cause
// asks.
type PartlySettledError struct {
	// Settled are the deliveries that may be acknowledged.
	Settled []messaging.Delivery
	// Err is why the batch ended early.
	Err error
}

// Error says how many deliveries were settled before the batch ended, and why it did.
func (e *PartlySettledError) Error() string {
	return fmt.Sprintf("deadletter: %d delivery(ies) of the batch were settled before it ended early; the others must not be acknowledged: %v", len(e.Settled), e.Err)
}

// Unwrap returns why the batch ended early.
func (e *PartlySettledError) Unwrap() error { return e.Err }

// markDone records that delivery was settled for good: acknowledging it
// cannot lose it, whatever becomes of the rest of the batch.
func (c *call) markDone(delivery messaging.Delivery) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if decision, settled := c.decisions[keyOf(delivery)]; settled && decision.Verdict != messaging.Accepted {
		return // set aside while it ran alone: markSettled listed it
	}
	c.done = append(c.done, delivery)
}

// ending is the value to panic with when the batch ends early with value:
// value itself when nothing was settled for good, else a
// *PartlySettledError that lists what was.
func (c *call) ending(value any) any {
	c.mu.Lock()
	done := append([]messaging.Delivery(nil), c.done...)
	c.mu.Unlock()
	if len(done) == 0 {
		return value
	}
	err, ok := value.(error)
	if !ok {
		err = fmt.Errorf("%v", value)
	}
	return &PartlySettledError{Settled: done, Err: err}
}
