package flow

import (
	"context"

	"github.com/warrenmq/messaging"
)

// Then returns a handler that runs step for each message and publishes what
// it returns to to, as the next message of the flow: mandatory and confirmed
// whatever writer is (writer itself is not changed), with the input's
// correlation id, the input's id as its causation id and the input's
// FirstSeen, so the age of the last message is the age of the run.
//
// The input is acknowledged only once the next message is confirmed and
// routed. step returning false publishes nothing and accepts the input (a
// run ended early, reported when the step is named with InPipeline). An
// error from step retries the input through the settlement's retry policy
// (messaging.Retry), or dead-letters it when it is marked messaging.Fatal;
// an outage (messaging.IsOutage) holds the batch without spending an
// attempt. A publish that fails retries the input with "acemq: the work for
// message <id> is done but the next message did not go out: <why>".
//
// writer publishes straight to the broker (batch.New(transport), say): a
// transaction's writer would roll a hop back with the transaction while the
// hop record still counts it as published.
//
// The handler settles single messages, so it runs under a settlement
// decorator (the streaming runtime puts one around every worker). The hop
// is published once per batch however often retry runs the batch
// (messaging.PublishOnce), and its id is derived from the input's, so a hop
// published again after a redelivery carries the same id.
func Then[In, Out any](writer messaging.Writer, to Address, step func(ctx context.Context, delivery messaging.Delivery, in In) (Out, bool, error), options ...Option) messaging.Handler {
	return &handler[In, Out]{config: newConfig(options), writer: writer, fn: step, mode: modeThen, to: to}
}

// FollowSlip returns a handler that runs step for each message and forwards
// what it returns along the message's routing slip: the stop it was for is
// marked done, and the message goes to the next stop, in the form (the
// acemq-routing-slip header or the declared route headers) it arrived in,
// mandatory and confirmed, with the correlation carried and the input's id
// as its causation id. When no stop remains the input is accepted and the
// run reported as completed (when named: InPipeline or AlongRoute).
//
// A message without a slip, with an unreadable one, or with a declared route
// when the handler was given no AlongRoute, is dead-lettered: no retry can
// help it. A step error retries the input (messaging.Retry), or dead-letters
// it when marked messaging.Fatal; a failed forward retries it with "acemq:
// <step> is done for message <id> but the next step did not go out: <why>".
func FollowSlip[T any](writer messaging.Writer, step func(ctx context.Context, delivery messaging.Delivery, message T) (T, error), options ...Option) messaging.Handler {
	fn := func(ctx context.Context, delivery messaging.Delivery, message T) (T, bool, error) {
		out, err := step(ctx, delivery, message)
		return out, true, err
	}
	return &handler[T, T]{config: newConfig(options), writer: writer, fn: fn, mode: modeSlip}
}

// Start publishes message to the slip's first stop, carrying the slip in its
// form, mandatory and confirmed through writer. message's envelope fields
// (id, correlation, headers, ...) are kept; its address and route fields are
// the slip's. A slip with no stop is ErrNoSteps.
func Start(ctx context.Context, writer messaging.Writer, slip *Slip, message messaging.Dispatch) error {
	if slip == nil || len(slip.steps) == 0 {
		return ErrNoSteps
	}
	if err := slip.Apply(&message); err != nil {
		return err
	}
	message.Mandatory = true
	_, err := writer.Write(ctx, message)
	return err
}
