package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// publishScenario: the batch writer with confirms against raw pipelined confirms
// with the same window, into one durable classic queue.
func publishScenario(s settings) scenario {
	body := make([]byte, s.size)
	raw := func(ctx context.Context, queue string) (measurement, error) {
		watch := startWatch()
		n, err := rawPublish(ctx, s.url, queue, body, s.window, s.duration, false, 0)
		return watch.stop(n), err
	}
	rawEnvelope := func(batch int) run {
		return func(ctx context.Context, queue string) (measurement, error) {
			watch := startWatch()
			n, err := rawPublish(ctx, s.url, queue, body, max(s.window, batch), s.duration, true, batch)
			return watch.stop(n), err
		}
	}
	viaBatch := func(size int) run {
		return func(ctx context.Context, queue string) (measurement, error) {
			transport := rabbitmq.New(rabbitmq.Options.Address(s.url), rabbitmq.Options.MaxOutstandingPublishes(s.window))
			defer transport.Close()
			writer := batch.New(transport)
			defer writer.Close()
			dispatches := make([]messaging.Dispatch, size)
			for i := range dispatches {
				dispatches[i] = messaging.Dispatch{RoutingKey: queue, Mandatory: true, ContentType: "application/octet-stream", Payload: body}
			}
			watch := startWatch()
			deadline := watch.start.Add(s.duration)
			total := 0
			for time.Now().Before(deadline) {
				n, err := writer.Write(ctx, dispatches...)
				total += n
				if err != nil {
					return watch.stop(total), err
				}
			}
			return watch.stop(total), nil
		}
	}
	return scenario{name: "publish", allocs: true, sides: []side{
		{name: "raw", run: raw},
		{name: "raw+envelope", baseline: "raw", run: rawEnvelope(0)},
		{name: "raw+envelope-100", baseline: "raw", run: rawEnvelope(100)},
		{name: "batch-100", baseline: "raw", run: viaBatch(100)},
		{name: "batch-1000", baseline: "raw", run: viaBatch(1000)},
	}, report: publishReport}
}

// publishReport prints the batch writer's rates beside the raw client's with
// the same envelope: pipelined without a pause, and waiting for each batch
// of 100's confirms as a Write of 100 does (the floor beneath batch-100).
func publishReport(totals []measurement) {
	ratio := func(ours, raw measurement) float64 {
		if raw.rate() == 0 {
			return 0
		}
		return ours.rate() / raw.rate()
	}
	envelope, envelope100, batch100, batch1000 := totals[1], totals[2], totals[3], totals[4]
	fmt.Printf("# publish with the envelope on both sides: batch-100 / raw+envelope %.2f, batch-100 / raw+envelope-100 %.2f, batch-1000 / raw+envelope %.2f\n",
		ratio(batch100, envelope), ratio(batch100, envelope100), ratio(batch1000, envelope))
}

type benchMessage struct {
	Data string `json:"data"`
}

// consumeScenario: streaming + serialization + retry against a raw consumer with
// prefetch and multiple-ack, draining the same preloaded queue.
func consumeScenario(s settings) scenario {
	body, _ := json.Marshal(benchMessage{Data: strings.Repeat("x", max(0, s.size-12))})
	limit := time.Minute
	raw := func(ctx context.Context, queue string) (measurement, error) {
		if err := preload(ctx, s, queue, body); err != nil {
			return measurement{}, err
		}
		watch := startWatch()
		n, err := rawConsume(ctx, s.url, queue, s.window, s.messages, limit)
		return watch.stop(n), err
	}
	return scenario{name: "consume", allocs: true, report: consumeAckReport(s.window), sides: []side{
		{name: "raw", run: raw},
		{name: "tuned", baseline: "raw", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeOurs(ctx, s, queue, body, limit,
				streaming.SubscriptionOptions.BufferCapacity(uint16(min(s.window, 65535))),
				streaming.SubscriptionOptions.BatchCapacity(uint16(min(s.window, 65535))))
		}},
		{name: "buffer-256", baseline: "raw", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeOurs(ctx, s, queue, body, limit, streaming.SubscriptionOptions.BufferCapacity(256))
		}},
		{name: "defaults", baseline: "raw", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeOurs(ctx, s, queue, body, limit)
		}},
	}}
}

// ackCounter counts the runtime's acknowledgements, each a call to the broker.
type ackCounter struct {
	streaming.NopMonitor
	calls atomic.Int64
}

func (c *ackCounter) BatchAcknowledged(string, int, error) { c.calls.Add(1) }

// consumeAckReport prints how many messages each of our sides settled per
// acknowledgement, beside raw's fixed multiple-ack every half window: every
// acknowledgement is a frame both the client and the broker process.
func consumeAckReport(window int) func([]measurement) {
	return func(totals []measurement) {
		names := []string{"tuned", "buffer-256", "defaults"}
		parts := []string{fmt.Sprintf("raw %d", max(1, window/2))}
		for i, name := range names {
			if m := totals[i+1]; m.batches > 0 {
				parts = append(parts, fmt.Sprintf("%s %.1f", name, float64(m.msgs)/float64(m.batches)))
			}
		}
		fmt.Printf("# consume msgs/ack: %s\n", strings.Join(parts, ", "))
	}
}

func consumeOurs(ctx context.Context, s settings, queue string, body []byte, limit time.Duration, options ...streaming.SubscriptionOption) (measurement, error) {
	return consumeWith(ctx, s, queue, body, limit, 1, nil, options...)
}

// consumeWith is consumeOurs with workers workers sharing one handler, wrapped
// in wrap when it is not nil (a pattern's middleware, to measure its cost).
func consumeWith(ctx context.Context, s settings, queue string, body []byte, limit time.Duration, workers int, wrap messaging.Middleware, options ...streaming.SubscriptionOption) (measurement, error) {
	if err := preload(ctx, s, queue, body); err != nil {
		return measurement{}, err
	}
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url))
	defer transport.Close()
	decoded := serialization.New(transport,
		serialization.Options.ReadTypes(map[string]reflect.Type{"bench": reflect.TypeOf(benchMessage{})}))
	var handled atomic.Int64
	done := make(chan struct{})
	want := int64(s.messages)
	handler := retry.New(messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		for _, m := range messages {
			if _, ok := m.(benchMessage); !ok {
				panic(fmt.Sprintf("bench: unexpected message %T", m))
			}
		}
		if handled.Add(int64(len(messages))) >= want {
			select {
			case <-done:
			default:
				close(done)
			}
		}
	}))
	if wrap != nil {
		handler = wrap(handler)
	}
	each := make([]messaging.Handler, max(workers, 1))
	for i := range each {
		each[i] = handler
	}
	options = append([]streaming.SubscriptionOption{
		streaming.SubscriptionOptions.AddWorkers(each...),
		streaming.SubscriptionOptions.EstablishTopology(false),
		streaming.SubscriptionOptions.DeadLetters(false),
	}, options...)
	acks := &ackCounter{}
	consumer := streaming.New(decoded, streaming.Options.Monitor(acks),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue, options...)))
	watch := startWatch()
	go consumer.Listen()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
	m := watch.stop(int(handled.Load()))
	_ = consumer.Close()
	m.batches = int(acks.calls.Load())
	if m.msgs < s.messages {
		return m, fmt.Errorf("consumed %d of %d within %s; is the broker under a memory alarm or another consumer on the queue?", m.msgs, s.messages, limit)
	}
	return m, nil
}

// preload fills the queue with s.messages JSON messages of type "bench", with
// the raw client (not timed).
func preload(ctx context.Context, s settings, queue string, body []byte) error {
	return preloadSpread(ctx, s, []string{queue}, s.messages, body)
}
