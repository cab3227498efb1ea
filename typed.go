package messaging

import (
	"context"
	"fmt"
)

// HandleEach adapts fn, which handles one decoded message of type T and
// returns an error, to the Handler contract, so a handler needs neither a
// type assertion nor a panic:
//
//	handler := messaging.HandleEach(func(ctx context.Context, order OrderPlaced) error {
//		return ship(ctx, order.ID)
//	})
//
// The Handler calls fn for each message of the batch, in order, with a
// context in which DeliveryFrom returns that message's envelope. An error
// fn returns fails the batch the way a panic does, so it is settled by the
// decorators around it: an error marked Fatal is dead-lettered at once (the
// settlement decorator isolates the message that fails), an outage
// (IsOutage) holds the batch until the dependency answers, and any other
// error spends the retry budget; inside handlers/transactional the whole
// batch's transaction is rolled back first. A message that is not a T (nor a
// Delivery whose Message is a T) is parked with a reason naming both types,
// and the others are handled.
//
// A T of messaging.Delivery receives the whole delivery (with
// streaming.SubscriptionOptions.FullDeliveryToHandler).
func HandleEach[T any](fn func(ctx context.Context, message T) error) Handler {
	return HandlerFunc(func(ctx context.Context, messages ...any) {
		values, deliveries := typedBatch[T](ctx, messages)
		for i, value := range values {
			if err := fn(withOne(ctx, deliveries, i), value); err != nil {
				panic(failedOn(deliveries, i, err))
			}
		}
	})
}

// HandleBatch adapts fn, which handles a whole batch of decoded messages of
// type T and returns an error, to the Handler contract. fn's context carries
// the envelopes of exactly the messages it is given (DeliveriesFrom), in the
// same order. An error is settled as HandleEach's are, for the whole batch:
// the settlement decorator then handles each message alone to find the one
// at fault, so return an error only when the batch could not be handled. A
// message that is not a T is parked and left out of the batch.
func HandleBatch[T any](fn func(ctx context.Context, messages []T) error) Handler {
	return HandlerFunc(func(ctx context.Context, messages ...any) {
		values, deliveries := typedBatch[T](ctx, messages)
		if len(values) == 0 {
			return
		}
		if deliveries != nil {
			ctx = WithDeliveries(ctx, deliveries)
		}
		if err := fn(ctx, values); err != nil {
			panic(err)
		}
	})
}

// DeliveryFrom returns the envelope of the one message a HandleEach
// function (or any handler given a single message) is handling; ok is false
// when the context carries no envelope or more than one.
func DeliveryFrom(ctx context.Context) (Delivery, bool) {
	deliveries := DeliveriesFrom(ctx)
	if len(deliveries) != 1 {
		return Delivery{}, false
	}
	return deliveries[0], true
}

// typedBatch returns the messages that are a T, with their envelopes when the
// context carries them (nil otherwise). A message that is not a T is parked
// through the context's Settler; without one, the batch panics with a Fatal
// error naming both types.
func typedBatch[T any](ctx context.Context, messages []any) ([]T, []Delivery) {
	all := DeliveriesFrom(ctx)
	if len(all) != len(messages) {
		all = nil
	}
	values := make([]T, 0, len(messages))
	var deliveries []Delivery
	if all != nil {
		deliveries = make([]Delivery, 0, len(messages))
	}
	for i, message := range messages {
		value, ok := typed[T](message)
		if !ok {
			err := Fatalf("messaging: this handler takes %T; message %d of the batch is a %T", *new(T), i, payloadOf(message))
			if all == nil || Park(ctx, all[i], err) != nil {
				panic(err)
			}
			continue
		}
		values = append(values, value)
		if all != nil {
			deliveries = append(deliveries, all[i])
		}
	}
	return values, deliveries
}

// typed returns message as a T, or the Message of a Delivery as a T.
func typed[T any](message any) (T, bool) {
	if value, ok := message.(T); ok {
		return value, true
	}
	if delivery, ok := message.(Delivery); ok {
		if value, ok := delivery.Message.(T); ok {
			return value, true
		}
	}
	var zero T
	return zero, false
}

// payloadOf is what a message carries, for an error: a Delivery's Message.
func payloadOf(message any) any {
	if delivery, ok := message.(Delivery); ok && delivery.Message != nil {
		return delivery.Message
	}
	return message
}

// withOne returns ctx carrying the envelope of message i alone.
func withOne(ctx context.Context, deliveries []Delivery, i int) context.Context {
	if deliveries == nil {
		return ctx
	}
	return WithDeliveries(ctx, deliveries[i:i+1])
}

// failedOn is err, named with the message it failed on when the envelope is
// known; errors.Is and IsFatal/IsOutage still see err through it.
func failedOn(deliveries []Delivery, i int, err error) error {
	if deliveries == nil {
		return err
	}
	d := deliveries[i]
	return fmt.Errorf("message %q (%s): %w", d.MessageID, d.MessageType, err)
}
