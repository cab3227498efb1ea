package saga

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/idempotency"
)

// Handler returns the messaging.Handler that runs s once per message: the
// safe way to start a saga from a queue. A message is delivered at least once,
// and one whose saga finished but whose acknowledgement died with its
// connection comes back; run without a guard, its saga runs again, its
// compensations included (a second refund). Handler claims each message's key
// in store first (idempotency.Middleware, with options), so a redelivered message
// whose saga ran is a duplicate, accepted without running it; a copy that
// arrives while the saga runs is put back as in progress.
//
// When the batch's context carries a SQL transaction (handlers/sqltx or
// handlers/transactional outside, messaging.TransactionSlotFrom(ctx).Tx) and
// store is an *idempotency.SQLStore, the claims are written in that
// transaction (idempotency.InTransaction), so the claim and what the saga's
// steps write through the same transaction commit together.
//
// Each message is a T (the decoded message), or a messaging.Delivery whose
// Message is a T (FullDeliveryToHandler); anything else is rejected as
// unprocessable. The saga runs detached from the handler's cancellation, so a
// shutdown lets a running saga finish rather than compensate it halfway: bound
// its steps yourself. Then the message is settled on the outcome:
//
//   - Completed: accepted; its key is confirmed.
//   - Compensated: accepted too: the saga ran and was undone, and running it
//     again would do and undo it again. When the step failed because a
//     dependency was away (messaging.IsOutage of the step's error), the
//     message is retried instead with the error marked messaging.Outage: its
//     key is released, no attempt is spent, and the saga runs again.
//   - Unresolved: rejected (dead-lettered) with the result as its reason: an
//     undo failed, and a person has to look.
func Handler[T any](s *Saga[T], store idempotency.Store, options ...idempotency.Option) messaging.Handler {
	run := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		deliveries := messaging.DeliveriesFrom(ctx)
		for i, message := range messages {
			s.runOne(ctx, deliveries[i], message)
		}
	})
	h := &sagaHandler{plain: idempotency.Middleware(store, options...)(run)}
	if sql, ok := store.(*idempotency.SQLStore); ok {
		h.inTransaction = idempotency.InTransaction(sql, options...)(run)
	}
	return h
}

// sagaHandler is Handler's guard: in the batch's transaction when it has one
// and the store can write there, else the store's own claims.
type sagaHandler struct {
	plain, inTransaction messaging.Handler
}

func (h *sagaHandler) Handle(ctx context.Context, messages ...any) {
	if slot := messaging.TransactionSlotFrom(ctx); h.inTransaction != nil && slot != nil && slot.Tx != nil {
		h.inTransaction.Handle(ctx, messages...)
		return
	}
	h.plain.Handle(ctx, messages...)
}

// runOne runs the saga for one claimed message and settles it on the result.
func (s *Saga[T]) runOne(ctx context.Context, delivery messaging.Delivery, message any) {
	v, ok := message.(T)
	if !ok {
		if d, isDelivery := message.(messaging.Delivery); isDelivery {
			v, ok = d.Message.(T)
		}
	}
	if !ok {
		var want T
		err := messaging.Fatalf("saga %q: message %s is a %T, not the %T the saga runs on", s.name, delivery.MessageID, message, want)
		mustSettle(messaging.Reject(ctx, delivery, err))
		return
	}
	result := s.Run(context.WithoutCancel(ctx), v)
	switch {
	case result.Outcome() == Unresolved:
		mustSettle(messaging.Reject(ctx, delivery, messaging.Fatal(fmt.Errorf("%s", result))))
	case result.Outcome() == Compensated && messaging.IsOutage(result.Err):
		mustSettle(messaging.Retry(ctx, delivery, messaging.Outage(fmt.Errorf("%s; it runs again when the dependency answers", result))))
	default:
		// Accepted at once, so a later message of the batch that fails does
		// not release this one's key: its saga ran.
		if err := messaging.Accept(ctx, delivery); err != nil && !errors.Is(err, messaging.ErrNoSettler) {
			panic(err)
		}
	}
}

// mustSettle panics with err when a settlement failed: nothing is
// acknowledged and the broker redelivers.
func mustSettle(err error) {
	if err != nil {
		panic(err)
	}
}
