package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
)

// Middleware returns the idempotency guard as a messaging.Middleware. For each
// delivery of a batch it claims the delivery's key in store:
//
//   - claimed: the message is handed to the inner handler (with the others
//     claimed; messaging.DeliveriesFrom stays aligned with what it receives).
//     When the handler returns, the key is confirmed, unless the handler
//     settled the message otherwise than by accepting it (Reject, Park, Retry,
//     InProgress): then, as when it panics, the key is released so the retry
//     runs, and the panic goes on outwards;
//   - duplicate: messaging.Accept, the handler does not run;
//   - in progress: messaging.InProgress(delay), the handler does not run; the
//     attempt does not advance and the message is never dead-lettered for it;
//   - an empty key: messaging.Reject with an error marked messaging.Fatal;
//   - a store error: messaging.Retry with it (for every message of the batch
//     when a BatchStore's one claim of the batch failed); when the error is an
//     outage (messaging.IsOutage: the store unreachable), the claims of the
//     batch are released and the batch panics with the error marked
//     messaging.Outage, so nothing is acknowledged and no attempt is spent.
//
// With a BatchStore (the SQL store) the batch's keys are claimed with one
// TryClaimAll and the handled ones confirmed with one ConfirmAll.
//
// It needs a settlement decorator outside it (the streaming runtime puts one
// around every worker). Put it outside retry and transactional, so one claim
// covers the retries of a batch.
func Middleware(store Store, options ...Option) messaging.Middleware {
	c := newConfig(options)
	return func(inner messaging.Handler) messaging.Handler {
		return &handler{inner: inner, store: store, config: c}
	}
}

// New is Middleware(store, options...)(inner): inner guarded by claims in
// store.
func New(store Store, inner messaging.Handler, options ...Option) messaging.Handler {
	return Middleware(store, options...)(inner)
}

type handler struct {
	inner  messaging.Handler
	store  Store
	config config
}

// claimedMessage is a delivery whose key this Handle holds.
type claimedMessage struct {
	message  any
	delivery messaging.Delivery
	claim    Claim
	lost     bool // the store said the claim was taken by another delivery
}

// Handle claims, settles what must not run, runs the rest and confirms or
// releases their keys.
func (h *handler) Handle(ctx context.Context, messages ...any) {
	deliveries := messaging.DeliveriesFrom(ctx)
	if len(deliveries) != len(messages) {
		panic(messaging.Fatal(fmt.Errorf("idempotency: the handler received %d messages and its context %d envelopes; run it under the streaming runtime (or a decorator that sets messaging.WithDeliveries)", len(messages), len(deliveries))))
	}
	claimed := make([]*claimedMessage, 0, len(messages))
	var waiting []messaging.Delivery // in progress: put back once the claimed ones ran
	// Until the claimed messages are handed on, a panic (a failed
	// settlement, an outage, a key function that panicked) releases them.
	handedOn := false
	defer func() {
		if !handedOn {
			h.releaseAll(ctx, claimed)
		}
	}()
	claim := h.claimer(ctx, messages, deliveries)
	for i, delivery := range deliveries {
		claim, ok := claim(i)
		if !ok {
			continue
		}
		switch claim.Result {
		case Claimed:
			h.config.monitor.Claimed(delivery.SourceQueue)
			claimed = append(claimed, &claimedMessage{message: messages[i], delivery: delivery, claim: claim})
		case InProgress:
			h.config.monitor.InProgress(delivery.SourceQueue)
			waiting = append(waiting, delivery)
		default:
			h.config.monitor.Duplicate(delivery.SourceQueue)
			// Without a settler, returning acknowledges it all the same.
			if err := messaging.Accept(ctx, delivery); err != nil && !errors.Is(err, messaging.ErrNoSettler) {
				panic(err)
			}
		}
	}
	handedOn = true
	if len(claimed) > 0 {
		h.run(ctx, messages, claimed)
	}
	// The waits are held after the claimed messages ran, so a claim is not
	// held (nor its work delayed) for them.
	for _, delivery := range waiting {
		if err := messaging.InProgress(ctx, delivery, h.config.inProgressDelay); err != nil {
			panic(err)
		}
	}
}

// claimer returns what claims the key of deliveries[i]: key by key, or,
// when the store is a BatchStore, from one TryClaimAll of the batch's keys
// made before the first answer (a key refused as fatal makes the batch be
// claimed key by key, so only its message is refused).
func (h *handler) claimer(ctx context.Context, messages []any, deliveries []messaging.Delivery) func(i int) (Claim, bool) {
	batch, ok := h.store.(BatchStore)
	if !ok {
		return func(i int) (Claim, bool) {
			key := h.config.key(messages[i], deliveries[i])
			if !h.keyed(ctx, key, deliveries[i]) {
				return Claim{}, false
			}
			claim, err := h.tryClaim(ctx, key)
			return h.claimed(ctx, key, deliveries[i], claim, err)
		}
	}
	keys := make([]string, len(deliveries))
	var present []string
	for i, delivery := range deliveries {
		if keys[i] = h.config.key(messages[i], delivery); keys[i] != "" {
			present = append(present, keys[i])
		}
	}
	storeCtx, cancel := context.WithTimeout(ctx, h.config.storeTimeout)
	claims, err := batch.TryClaimAll(storeCtx, present)
	cancel()
	if err == nil && len(claims) != len(present) {
		err = fmt.Errorf("idempotency: the store answered %d claims for %d keys", len(claims), len(present))
	}
	next := 0
	return func(i int) (Claim, bool) {
		if !h.keyed(ctx, keys[i], deliveries[i]) {
			return Claim{}, false
		}
		if messaging.IsFatal(err) {
			claim, err := h.tryClaim(ctx, keys[i])
			return h.claimed(ctx, keys[i], deliveries[i], claim, err)
		}
		var claim Claim
		if err == nil {
			claim = claims[next]
			next++
		}
		return h.claimed(ctx, keys[i], deliveries[i], claim, err)
	}
}

// keyed rejects a delivery whose key is empty, as fatal: such a message is
// never handled without a guard.
func (h *handler) keyed(ctx context.Context, key string, delivery messaging.Delivery) bool {
	if key != "" {
		return true
	}
	err := messaging.Fatal(fmt.Errorf("acemq: message %s produced an empty idempotency key", delivery.MessageID))
	mustSettle(messaging.Reject(ctx, delivery, err))
	return false
}

// tryClaim asks the store for one key, within the store timeout.
func (h *handler) tryClaim(ctx context.Context, key string) (Claim, error) {
	storeCtx, cancel := context.WithTimeout(ctx, h.config.storeTimeout)
	defer cancel()
	return h.store.TryClaim(storeCtx, key)
}

// claimed takes the store's answer for delivery's key. ok is false when the
// delivery was settled instead (a store error that is the message's); a
// store that is unreachable panics with the error marked messaging.Outage.
func (h *handler) claimed(ctx context.Context, key string, delivery messaging.Delivery, claim Claim, err error) (_ Claim, ok bool) {
	if err == nil {
		return claim, true
	}
	if !messaging.IsFatal(err) { // a key the store refuses is the message's, not the store's
		h.config.monitor.StoreFailed(delivery.SourceQueue, OperationClaim, err)
	}
	err = fmt.Errorf("idempotency: the store could not claim key %q of message %s: %w", shorten(key), shorten(delivery.MessageID), err)
	if messaging.IsOutage(err) || ctx.Err() != nil {
		panic(messaging.Outage(err))
	}
	mustSettle(messaging.Retry(ctx, delivery, err))
	return Claim{}, false
}

// run hands the claimed messages to the inner handler, renewing their claims
// while it runs, then confirms or releases each key; a panic is re-raised
// after the keys are released.
func (h *handler) run(ctx context.Context, messages []any, claimed []*claimedMessage) {
	innerCtx, innerMessages := ctx, messages
	if len(claimed) != len(messages) {
		subset := make([]messaging.Delivery, len(claimed))
		innerMessages = make([]any, len(claimed))
		for i, c := range claimed {
			subset[i], innerMessages[i] = c.delivery, c.message
		}
		innerCtx = messaging.WithDeliveries(ctx, subset)
	}
	stopRenewing := h.renew(ctx, claimed)
	returned := false
	defer func() {
		stopRenewing()
		var done []*claimedMessage
		for _, c := range claimed {
			decision, decided := messaging.DecisionOf(innerCtx, c.delivery)
			switch {
			case c.lost:
				// Nothing of this delivery's is left to confirm or release.
			case decided && decision.Verdict == messaging.Accepted || returned && !decided:
				done = append(done, c)
			default:
				h.release(ctx, c)
			}
		}
		h.confirmAll(ctx, done)
	}()
	h.inner.Handle(innerCtx, innerMessages...)
	returned = true
}

// mustSettle panics with err when a settlement failed: nothing is
// acknowledged and the broker redelivers.
func mustSettle(err error) {
	if err != nil {
		panic(err)
	}
}

func (h *handler) releaseAll(ctx context.Context, claimed []*claimedMessage) {
	for _, c := range claimed {
		h.release(ctx, c)
	}
}

// renew keeps the claims' leases from ending while the handler runs: every
// third of the shortest lease it renews each claim not yet lost. A claim the
// store says another delivery took is lost (counted and logged once); a
// renewal that fails otherwise is reported and tried again at the next turn.
// The returned stop ends the renewals and waits for the last one.
func (h *handler) renew(ctx context.Context, claimed []*claimedMessage) (stop func()) {
	var lease time.Duration
	for _, c := range claimed {
		if c.claim.Lease > 0 && (lease == 0 || c.claim.Lease < lease) {
			lease = c.claim.Lease
		}
	}
	if lease == 0 {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		ticker := time.NewTicker(max(lease/3, time.Millisecond))
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
			}
			for _, c := range claimed {
				if c.claim.Lease > 0 && !c.lost {
					h.renewOne(ctx, c)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func (h *handler) renewOne(ctx context.Context, c *claimedMessage) {
	h.own(ctx, c, OperationRenew, h.store.Renew, "it is renewed again shortly; if its lease ends first, another delivery of the message may run it too")
}

// confirmAll records the work as done, with one ConfirmAll when the store is
// a BatchStore; a failure is reported and otherwise ignored: the claim then
// holds the key until its lease ends.
func (h *handler) confirmAll(ctx context.Context, done []*claimedMessage) {
	const consequence = "the next delivery within the claim's lease is put back as in progress, and one after it runs the handler again"
	batch, ok := h.store.(BatchStore)
	if !ok || len(done) == 0 {
		for _, c := range done {
			h.own(ctx, c, OperationConfirm, h.store.Confirm, consequence)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.config.storeTimeout)
	defer cancel()
	claims := make([]Claim, len(done))
	for i, c := range done {
		claims[i] = c.claim
	}
	for i, err := range batch.ConfirmAll(ctx, claims) {
		switch {
		case errors.Is(err, ErrClaimLost):
			h.claimLost(done[i], OperationConfirm)
		case err != nil:
			h.storeFailed(done[i], OperationConfirm, err, consequence)
		}
	}
}

// own calls the store on c's own claim, detached from the handler's
// cancellation and within the store timeout: a claim another delivery took
// is counted as lost, any other failure is reported with its consequence.
func (h *handler) own(ctx context.Context, c *claimedMessage, operation string, call func(context.Context, Claim) error, consequence string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.config.storeTimeout)
	defer cancel()
	switch err := call(ctx, c.claim); {
	case errors.Is(err, ErrClaimLost):
		h.claimLost(c, operation)
	case err != nil:
		h.storeFailed(c, operation, err, consequence)
	}
}

// release forgets the claim so the retry runs; a failure is reported and
// otherwise ignored: the claim then holds the key until its lease ends, and
// the retry is put back as in progress until then.
func (h *handler) release(ctx context.Context, c *claimedMessage) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.config.storeTimeout)
	defer cancel()
	h.config.monitor.Released(c.delivery.SourceQueue)
	if err := h.store.Release(ctx, c.claim); err != nil {
		h.storeFailed(c, OperationRelease, err, "its retry is put back as in progress until the claim's lease ends")
	}
}

// claimLost reports a claim the store says is no longer this delivery's.
func (h *handler) claimLost(c *claimedMessage, operation string) {
	c.lost = true
	queue := c.delivery.SourceQueue
	h.config.monitor.ClaimLost(queue)
	h.config.logger.Warn("An idempotency claim was taken by another delivery of its message after its lease ended; the message's work may run twice. Lengthen the store's ClaimTimeout, or look at why renewals failed.",
		slog.String("queue", queue), slog.String("operation", operation), slog.String("key", c.claim.Key), slog.String("message_id", c.delivery.MessageID))
}

func (h *handler) storeFailed(c *claimedMessage, operation string, err error, consequence string) {
	queue := c.delivery.SourceQueue
	h.config.monitor.StoreFailed(queue, operation, err)
	h.config.logger.Warn("Unable to reach the idempotency store for a key; see operation and consequence",
		slog.String("queue", queue), slog.String("operation", operation), slog.String("key", c.claim.Key),
		slog.String("message_id", c.delivery.MessageID), slog.Any("error", err), slog.String("consequence", consequence))
}
