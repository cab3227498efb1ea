package messaging

import (
	"context"
	"errors"
	"time"
)

// ErrNoSettler is returned by Accept, Reject, Park, Retry, InProgress and
// DecisionOf when the context carries no Settler: the handler does not run
// under the streaming runtime (or another settlement decorator), or was not
// given the context its Handle received.
var ErrNoSettler = errors.New("messaging: no settlement in this context; run the handler under the streaming runtime (or handlers/deadletter) and pass on the context Handle received")

// Verdict is what was decided for one delivery.
type Verdict int

const (
	// Undecided: nothing was decided yet; the delivery is acknowledged with
	// its batch when Handle returns.
	Undecided Verdict = iota
	// Accepted: acknowledged with its batch, whatever else happens to it.
	Accepted
	// Rejected: set aside in {queue}.dlq.
	Rejected
	// Parked: set aside in {queue}.parked.
	Parked
	// Retried: republished to its queue with its attempt advanced, after the
	// retry policy's wait (or dead-lettered when the policy gave up).
	Retried
	// InProgressed: republished unchanged to its queue after a delay; the
	// attempt does not advance and it is never dead-lettered for it.
	InProgressed
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case Accepted:
		return "accepted"
	case Rejected:
		return "rejected"
	case Parked:
		return "parked"
	case Retried:
		return "retried"
	case InProgressed:
		return "in_progress"
	default:
		return "undecided"
	}
}

// Decision is a settlement asked for one delivery.
type Decision struct {
	Verdict Verdict
	// Reason is why (Reject, Park, Retry); it is written to x-acemq-error.
	Reason error
	// Delay is InProgress's wait before the copy is republished.
	Delay time.Duration
}

// Settler settles single deliveries of the batch being handled; a settlement
// decorator (handlers/deadletter, which the streaming runtime puts around
// every worker) puts one in the context it hands on. Settle republishes what
// the decision needs and returns once the broker confirmed and routed the
// copy; the delivery is acknowledged with its batch. On error the delivery is
// not acknowledged, and the broker redelivers it. Decided reports what was
// decided for a delivery, and what it became: a Retry the policy gave up on
// reads Rejected, a refused Retry or InProgress reads Parked.
type Settler interface {
	Settle(ctx context.Context, delivery Delivery, decision Decision) error
	Decided(delivery Delivery) (Decision, bool)
}

type settlerKey struct{}

// WithSettler returns a context whose Accept, Reject, Park, Retry and
// InProgress go to settler. Settlement decorators call it once per batch;
// handlers do not. Where ctx carries no hop record yet, the context also
// records hops as WithHopRecord does: the batch a settlement decorator
// settles is the batch whose hops are published once.
func WithSettler(ctx context.Context, settler Settler) context.Context {
	c := &settlerContext{Context: ctx, settler: settler}
	if c.hops, _ = ctx.Value(hopsKey{}).(*hopRecord); c.hops == nil {
		c.hops = &c.ownHops
	}
	return c
}

// settlerContext carries a batch's Settler and hop record in one allocation
// per batch, where two context.WithValue calls and the record took four.
type settlerContext struct {
	context.Context
	settler Settler
	hops    *hopRecord // the outer record, or ownHops
	ownHops hopRecord
}

// Value answers settlerKey and hopsKey without allocating, and every other
// key as the parent does.
func (c *settlerContext) Value(key any) any {
	switch key.(type) {
	case settlerKey:
		return c.settler
	case hopsKey:
		return c.hops
	}
	return c.Context.Value(key)
}

// SettlerFrom returns the context's Settler, or nil.
func SettlerFrom(ctx context.Context) Settler {
	settler, _ := ctx.Value(settlerKey{}).(Settler)
	return settler
}

func settle(ctx context.Context, delivery Delivery, decision Decision) error {
	settler := SettlerFrom(ctx)
	if settler == nil {
		return ErrNoSettler
	}
	return settler.Settle(ctx, delivery, decision)
}

// Accept acknowledges delivery with its batch, whatever else happens to the
// batch: a later failure does not set it aside or redeliver it.
func Accept(ctx context.Context, delivery Delivery) error {
	return settle(ctx, delivery, Decision{Verdict: Accepted})
}

// Reject sets delivery aside in {queue}.dlq with err as the reason.
func Reject(ctx context.Context, delivery Delivery, err error) error {
	return settle(ctx, delivery, Decision{Verdict: Rejected, Reason: err})
}

// Park sets delivery aside in {queue}.parked with err as the reason.
func Park(ctx context.Context, delivery Delivery, err error) error {
	return settle(ctx, delivery, Decision{Verdict: Parked, Reason: err})
}

// Retry republishes delivery to its queue with its attempt advanced, after
// the retry policy's wait; when the policy gives up (or err is marked Fatal)
// it is dead-lettered instead. An err marked as an outage spends no attempt.
// A consumer may refuse it: then the delivery is parked with the reason.
func Retry(ctx context.Context, delivery Delivery, err error) error {
	return settle(ctx, delivery, Decision{Verdict: Retried, Reason: err})
}

// InProgress republishes delivery unchanged to its queue after delay: the
// attempt does not advance and it is never dead-lettered for it. A consumer
// may refuse it: then the delivery is parked with the reason.
func InProgress(ctx context.Context, delivery Delivery, delay time.Duration) error {
	return settle(ctx, delivery, Decision{Verdict: InProgressed, Delay: delay})
}

// DecisionOf reports what was decided for delivery in the batch being
// handled, so an outer decorator can read what an inner one (or the handler)
// decided. ok is false when nothing was decided or there is no Settler.
func DecisionOf(ctx context.Context, delivery Delivery) (decision Decision, ok bool) {
	settler := SettlerFrom(ctx)
	if settler == nil {
		return Decision{}, false
	}
	return settler.Decided(delivery)
}
