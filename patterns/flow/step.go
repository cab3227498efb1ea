package flow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/warrenmq/messaging"
)

// Address is where Then publishes the next message.
type Address struct {
	// Topic is the exchange; empty is the default exchange.
	Topic string
	// RoutingKey is the key (the queue's name on the default exchange).
	RoutingKey string
}

// mode says how a handler finds where the next message goes.
type mode int

const (
	modeThen     mode = iota // a fixed Address
	modeSlip                 // the message's slip, which it must carry
	modePipeline             // the slip, or the pipeline's own route
)

// handler runs a typed step for each message of a batch and publishes what
// it returns as the next hop. Then, FollowSlip and a pipeline's steps are one.
type handler[In, Out any] struct {
	config config
	writer messaging.Writer
	fn     func(ctx context.Context, delivery messaging.Delivery, in In) (Out, bool, error)
	mode   mode
	to     Address
	// position is a pipeline step's index on config.route.
	position int
}

// Handle runs the step for each message in turn, then publishes the next
// messages together. A message settled already in this batch (a batch run
// again by retry) is left as it was.
func (h *handler[In, Out]) Handle(ctx context.Context, messages ...any) {
	envelopes := messaging.DeliveriesFrom(ctx)
	var hops []hop
	for i, message := range messages {
		delivery, ok := message.(messaging.Delivery)
		if !ok {
			if len(envelopes) != len(messages) {
				panic(messaging.Fatal(fmt.Errorf("acemq: the flow handler received %d messages and its context %d envelopes; run it under the streaming runtime (or a decorator that sets messaging.WithDeliveries)", len(messages), len(envelopes))))
			}
			delivery = envelopes[i]
			delivery.Message = message
		}
		if _, settled := messaging.DecisionOf(ctx, delivery); settled {
			continue
		}
		if next, ok := h.one(ctx, delivery); ok {
			hops = append(hops, next)
		}
	}
	h.publish(ctx, hops)
}

// one handles a single delivery: it settles it through the context's
// Settler, or returns the next message to publish, or panics when the batch
// must not be acknowledged (an outage, a settlement that failed).
func (h *handler[In, Out]) one(ctx context.Context, d messaging.Delivery) (hop, bool) {
	pipeline, step := h.config.pipeline, h.config.step
	var slip *Slip
	if h.mode != modeThen {
		var refusal error
		slip, refusal = h.slipOf(d)
		if refusal != nil {
			h.config.monitor.Refused(pipeline, step, refusal)
			mustSettle(messaging.Reject(ctx, d, refusal))
			return hop{}, false
		}
		next, ok := slip.Next()
		if !ok {
			return hop{}, false // a position past the end: the run is over, nothing to do
		}
		if step == "" {
			step = next.label()
		}
	}

	in, err := decodeAs[In](h.config, d)
	if err != nil {
		h.config.monitor.Refused(pipeline, step, err)
		mustSettle(messaging.Park(ctx, d, err))
		return hop{}, false
	}
	out, more, err := h.call(ctx, d, in)
	if err != nil {
		h.config.monitor.StepFailed(pipeline, step, err)
		switch {
		case messaging.IsOutage(err):
			panic(messaging.Outage(err)) // hold the batch; spend no attempt
		case messaging.IsFatal(err):
			mustSettle(messaging.Reject(ctx, d, err))
		default:
			mustSettle(messaging.Retry(ctx, d, err))
		}
		return hop{}, false
	}
	if !more {
		h.finished(ctx, d, slip, pipeline, step, OutcomeEndedEarly)
		return hop{}, false
	}
	if slip != nil {
		slip = slip.Advance(time.Now())
		if _, ok := slip.Next(); !ok {
			h.finished(ctx, d, slip, pipeline, step, OutcomeCompleted)
			return hop{}, false
		}
	}
	return h.prepare(ctx, d, slip, out, pipeline, step)
}

// slipOf reads the delivery's slip, or says why it cannot be followed: the
// error is fatal, and the message is dead-lettered with it.
func (h *handler[In, Out]) slipOf(d messaging.Delivery) (*Slip, error) {
	slip, found, err := ReadSlip(d)
	if err != nil {
		return nil, messaging.Fatal(fmt.Errorf("acemq: message %s: %w", d.MessageID, err))
	}
	if !found {
		if h.mode == modeSlip {
			return nil, messaging.Fatalf("acemq: message %s has no routing slip, so there is nowhere to send it next", d.MessageID)
		}
		// A pipeline step assumes the message is at its own position.
		slip = h.config.route.Start()
		for range h.position {
			slip = slip.Advance(time.Now())
		}
	}
	if slip.Form() == FormSteps {
		if h.config.route.Name == "" {
			return nil, messaging.Fatalf("acemq: message %s carries a declared route (%s) but this handler was not given one, so a step name cannot be turned into somewhere to publish. Pass patterns.AlongRoute(route) naming the pipeline these steps belong to", d.MessageID, strings.Join(d.Route, ","))
		}
		slip.AsSteps(h.config.route)
	}
	return slip, nil
}

// call runs the step; a panic in it is the step's failure, an error like any
// other, unless it panicked with an outage.
func (h *handler[In, Out]) call(ctx context.Context, d messaging.Delivery, in In) (out Out, more bool, err error) {
	defer func() {
		if value := recover(); value != nil {
			if failure, ok := value.(error); ok {
				if messaging.IsOutage(failure) {
					panic(value)
				}
				err = fmt.Errorf("acemq: the step panicked on message %s: %w", d.MessageID, failure)
				return
			}
			err = fmt.Errorf("acemq: the step panicked on message %s: %v", d.MessageID, value)
		}
	}()
	return h.fn(ctx, d, in)
}

// hop is a next message ready to go out, and what it is owed to.
type hop struct {
	delivery       messaging.Delivery
	key            string
	dispatch       messaging.Dispatch
	pipeline, step string
}

// prepare encodes out as the next message: mandatory, with the correlation
// carried, the input as its cause and the input's FirstSeen. It settles the
// input (Reject) and reports false when out cannot travel.
func (h *handler[In, Out]) prepare(ctx context.Context, d messaging.Delivery, slip *Slip, out Out, pipeline, step string) (hop, bool) {
	payload, err := h.config.serializer.Serialize(out)
	if err != nil {
		refusal := messaging.Fatal(fmt.Errorf("acemq: the step's result for message %s cannot be encoded: %w", d.MessageID, err))
		h.config.monitor.StepFailed(pipeline, step, refusal)
		mustSettle(messaging.Reject(ctx, d, refusal))
		return hop{}, false
	}
	next := hop{delivery: d, pipeline: pipeline, step: step, dispatch: messaging.Dispatch{
		Topic: h.to.Topic, RoutingKey: h.to.RoutingKey,
		CorrelationID: d.CorrelationID,
		CausationID:   d.MessageID,
		MessageType:   h.config.messageType,
		ContentType:   h.config.serializer.ContentType(),
		FirstSeen:     d.FirstSeen,
		Mandatory:     true,
		Payload:       payload,
	}}
	address := "then " + h.to.Topic + "/" + h.to.RoutingKey
	if slip != nil {
		stop, _ := slip.Next()
		address = "slip " + stop.Exchange + "/" + stop.RoutingKey
		if err := slip.Apply(&next.dispatch); err != nil {
			refusal := messaging.Fatal(fmt.Errorf("acemq: message %s: %w", d.MessageID, err))
			h.config.monitor.Refused(pipeline, step, refusal)
			mustSettle(messaging.Reject(ctx, d, refusal))
			return hop{}, false
		}
	}
	next.dispatch.MessageID = hopID(d.MessageID, address)
	next.key = d.SourceQueue + "\x00" + d.MessageID + "\x00" + address
	return next, true
}

// errNotPublished is what publish returns to ask PublishOnce whether a key
// was published already: PublishOnce calls publish only when it was not,
// and does not remember a failure.
var errNotPublished = errors.New("flow: not published yet")

// publish sends the batch's next messages, each once per batch however many
// times the batch runs (messaging.PublishOnce), in one write, so the batch
// waits for one confirmation instead of one per message. When that write
// fails as a whole for a reason that is not an outage (a wire limit), each
// goes alone, so one message cannot hold back the others.
func (h *handler[In, Out]) publish(ctx context.Context, hops []hop) {
	var todo []hop
	seen := map[string]bool{}
	for _, next := range hops {
		if seen[next.key] {
			continue // the same delivery twice in one batch: one hop
		}
		seen[next.key] = true
		if err := messaging.PublishOnce(ctx, next.key, func() error { return errNotPublished }); err == nil {
			continue // published on an earlier run of this batch
		}
		todo = append(todo, next)
	}
	switch len(todo) {
	case 0:
		return
	case 1:
		h.publishAlone(ctx, todo[0])
		return
	}
	dispatches := make([]messaging.Dispatch, len(todo))
	for i, next := range todo {
		dispatches[i] = next.dispatch
	}
	_, err := h.writer.Write(ctx, dispatches...)
	if err == nil {
		for _, next := range todo {
			h.landed(ctx, next)
		}
		return
	}
	var account *messaging.PublishError
	if !errors.As(err, &account) {
		if messaging.IsOutage(err) {
			h.failed(ctx, todo[0], err) // the broker is away: hold the batch
		}
		for _, next := range todo {
			h.publishAlone(ctx, next)
		}
		return
	}
	outcome := make(map[string]error, len(account.Results))
	for _, result := range account.Results {
		outcome[result.MessageID] = result.Err
	}
	var away []hop // settled last: an outage panics
	for _, next := range todo {
		err, answered := outcome[next.dispatch.MessageID]
		switch {
		case !answered:
			away = append(away, next)
		case err == nil:
			h.landed(ctx, next)
		case messaging.IsOutage(err):
			away = append(away, next)
		default:
			h.failed(ctx, next, err)
		}
	}
	for _, next := range away {
		reason := outcome[next.dispatch.MessageID]
		if reason == nil {
			reason = fmt.Errorf("the write did not account for it: %w", messaging.ErrArrivalUnknown)
		}
		h.failed(ctx, next, reason)
	}
}

// publishAlone sends one next message on its own.
func (h *handler[In, Out]) publishAlone(ctx context.Context, next hop) {
	published := false
	err := messaging.PublishOnce(ctx, next.key, func() error {
		_, err := h.writer.Write(ctx, next.dispatch)
		published = err == nil
		return err
	})
	switch {
	case err != nil:
		h.failed(ctx, next, err)
	case published: // not one published on an earlier run of this batch
		h.config.monitor.Forwarded(next.pipeline, next.step)
	}
}

// landed records a next message the broker confirmed and routed.
func (h *handler[In, Out]) landed(ctx context.Context, next hop) {
	_ = messaging.PublishOnce(ctx, next.key, func() error { return nil })
	h.config.monitor.Forwarded(next.pipeline, next.step)
}

// failed settles the input of a next message that did not go out: retried
// with the family's text, rejected when it can never fit the wire, and held
// (a panic marked as an outage) when the broker is away.
func (h *handler[In, Out]) failed(ctx context.Context, next hop, err error) {
	d, pipeline, step := next.delivery, next.pipeline, next.step
	var failure error
	switch h.mode {
	case modeThen:
		failure = fmt.Errorf("acemq: the work for message %s is done but the next message did not go out: %w", d.MessageID, err)
	case modeSlip:
		failure = fmt.Errorf("acemq: %s is done for message %s but the next step did not go out: %w", step, d.MessageID, err)
	default:
		failure = fmt.Errorf("acemq: pipeline %s step %s finished with message %s but the next message did not go out: %w", pipeline, step, d.MessageID, err)
	}
	h.config.monitor.ForwardFailed(pipeline, step, failure)
	switch {
	case messaging.IsOutage(err):
		panic(messaging.Outage(failure))
	case errors.Is(err, messaging.ErrWireLimit):
		mustSettle(messaging.Reject(ctx, d, messaging.Fatal(failure))) // it will never fit
	default:
		mustSettle(messaging.Retry(ctx, d, failure))
	}
}

// finished reports a run that ended at this step, when it is named; the
// delivery is acknowledged with its batch.
func (h *handler[In, Out]) finished(ctx context.Context, d messaging.Delivery, slip *Slip, pipeline, step, outcome string) {
	if pipeline == "" {
		return
	}
	run := RunFinished{
		Pipeline: pipeline, Step: step, Outcome: outcome,
		MessageID: d.MessageID, CorrelationID: d.CorrelationID,
	}
	if slip != nil {
		run.RunID = slip.RunID()
	}
	if !d.FirstSeen.IsZero() {
		run.Age = time.Since(d.FirstSeen)
	}
	h.config.monitor.RunFinished(run)
	if h.config.observer != nil {
		h.config.observer.RunFinished(ctx, run)
	}
	if observer := RunObserverFrom(ctx); observer != nil {
		observer.RunFinished(ctx, run)
	}
}

// decodeAs returns the delivery's message as In: the value the stack
// decoded, or the payload decoded with the configured deserializer. A body
// that cannot be read as In is an error marked fatal.
func decodeAs[In any](c config, d messaging.Delivery) (In, error) {
	var in In
	if value, ok := d.Message.(In); ok && d.Message != nil {
		return value, nil
	}
	if pointer, ok := d.Message.(*In); ok && pointer != nil { // a pointer type registered for reading
		return *pointer, nil
	}
	if d.Message != nil {
		return in, messaging.Fatalf("acemq: message %s was decoded as %T but this step consumes %s", d.MessageID, d.Message, reflect.TypeFor[In]())
	}
	if err := c.deserializer.Deserialize(d.Payload, &in); err != nil {
		return in, messaging.Fatal(fmt.Errorf("acemq: message %s cannot be read as %s: %w", d.MessageID, reflect.TypeFor[In](), err))
	}
	return in, nil
}

// hopID is the next message's id: the same for the same input and hop, so a
// hop published again after a redelivery is recognisably the same message
// to an idempotency guard downstream. It is a UUID in the canonical form
// (version 8, name-based over SHA-256).
func hopID(inputID, key string) string {
	sum := sha256.Sum256([]byte(inputID + "\x00" + key))
	u := sum[:16]
	u[6] = (u[6] & 0x0f) | 0x80
	u[8] = (u[8] & 0x3f) | 0x80
	text := hex.EncodeToString(u)
	return text[0:8] + "-" + text[8:12] + "-" + text[12:16] + "-" + text[16:20] + "-" + text[20:32]
}

// mustSettle panics with a settlement's failure, so the batch is not
// acknowledged and the broker redelivers it.
func mustSettle(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, messaging.ErrNoSettler) {
		panic(messaging.Fatal(fmt.Errorf("acemq: a flow handler settles single messages: %w", err)))
	}
	panic(err)
}
