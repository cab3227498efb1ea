package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// benchMessage is what ours and watermill decode every payload into.
type benchMessage struct {
	Data string `json:"data"`
}

// consumeScenario: s.consume JSON messages already in the queue (loaded with
// the raw client before the clock starts), consumed and acknowledged, every
// consumer with a prefetch of s.window.
func consumeScenario(s settings) scenario {
	body, _ := json.Marshal(benchMessage{Data: strings.Repeat("x", max(0, s.size-12))})
	loaded := func(consume func(ctx context.Context, queue string) (result, error)) func(context.Context, string) (result, error) {
		return func(ctx context.Context, queue string) (result, error) {
			if err := preload(ctx, s, queue, body); err != nil {
				return result{}, fmt.Errorf("preload: %w", err)
			}
			return consume(ctx, queue)
		}
	}
	return scenario{name: "consume", sides: []side{
		{name: "raw", role: isBaseline, run: loaded(func(ctx context.Context, queue string) (result, error) {
			return rawConsume(ctx, s, queue)
		})},
		{name: "ours-tuned", role: isOurs, run: loaded(func(ctx context.Context, queue string) (result, error) {
			return oursConsume(ctx, s, queue)
		})},
		{name: "watermill", role: isWatermill, run: loaded(func(ctx context.Context, queue string) (result, error) {
			return watermillConsume(ctx, s, queue)
		})},
	}}
}

// preload publishes s.consume messages of type "bench", each with a message
// id and the header watermill reads its message UUID from, so that every
// consumer gets the same bytes.
func preload(ctx context.Context, s settings, queue string, body []byte) error {
	conn, ch, err := open(s.url, true)
	if err != nil {
		return err
	}
	defer conn.Close()
	pending := make([]*amqp.DeferredConfirmation, 0, s.window)
	for i := range s.consume {
		id := fmt.Sprintf("m-%d", i)
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, false, false, amqp.Publishing{
			DeliveryMode: amqp.Persistent, ContentType: "application/json", Type: "bench", MessageId: id,
			Headers: amqp.Table{wmamqp.DefaultMessageUUIDHeaderKey: id}, Body: body,
		})
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		if pending = append(pending, c); len(pending) == s.window || i == s.consume-1 {
			if err := confirmed(ctx, pending); err != nil {
				return err
			}
			pending = pending[:0]
		}
	}
	return nil
}

// rawConsume drains the queue with amqp091-go: prefetch s.window, one
// multiple-ack every half window.
func rawConsume(ctx context.Context, s settings, queue string) (result, error) {
	conn, ch, err := open(s.url, false)
	if err != nil {
		return result{}, err
	}
	defer conn.Close()
	if err := ch.Qos(s.window, 0, false); err != nil {
		return result{}, fmt.Errorf("qos: %w", err)
	}
	start := time.Now()
	deliveries, err := ch.ConsumeWithContext(ctx, queue, "", false, false, false, false, nil)
	if err != nil {
		return result{}, fmt.Errorf("consume: %w", err)
	}
	ackEvery := max(1, s.window/2)
	for got := 1; got <= s.consume; got++ {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return result{}, fmt.Errorf("the channel closed after %d deliveries", got-1)
			}
			if got%ackEvery == 0 || got == s.consume {
				if err := d.Ack(true); err != nil {
					return result{}, fmt.Errorf("ack: %w", err)
				}
			}
		case <-ctx.Done():
			return result{}, fmt.Errorf("consumed %d of %d: %w", got-1, s.consume, ctx.Err())
		}
	}
	return result{msgs: s.consume, elapsed: time.Since(start)}, nil
}

// oursConsume is the streaming runtime over serialization (each payload
// decoded into a benchMessage) with one retry-wrapped worker, buffer and batch
// capacity s.window, as `make bench` runs consume/tuned.
func oursConsume(ctx context.Context, s settings, queue string) (result, error) {
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url))
	defer transport.Close()
	decoded := serialization.New(transport,
		serialization.Options.ReadTypes(map[string]reflect.Type{"bench": reflect.TypeFor[benchMessage]()}))
	var handled, foreign atomic.Int64
	done := make(chan struct{})
	handler := retry.New(messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		for _, m := range messages {
			if _, ok := m.(benchMessage); !ok {
				foreign.Add(1)
			}
		}
		if handled.Add(int64(len(messages))) == int64(s.consume) {
			close(done)
		}
	}))
	capacity := uint16(min(s.window, 65535))
	consumer := streaming.New(decoded, streaming.Options.Subscriptions(streaming.NewSubscription(queue,
		streaming.SubscriptionOptions.AddWorkers(handler),
		streaming.SubscriptionOptions.EstablishTopology(false),
		streaming.SubscriptionOptions.DeadLetters(false),
		streaming.SubscriptionOptions.BufferCapacity(capacity),
		streaming.SubscriptionOptions.BatchCapacity(capacity))))
	start := time.Now()
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		consumer.Listen()
	}()
	defer func() {
		_ = consumer.Close()
		<-listening // Close is bounded, and Listen returns once it has
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return result{}, fmt.Errorf("handled %d of %d: %w", handled.Load(), s.consume, ctx.Err())
	}
	elapsed := time.Since(start)
	if n := foreign.Load(); n > 0 {
		return result{}, fmt.Errorf("%d messages were not decoded into a benchMessage", n)
	}
	return result{msgs: s.consume, elapsed: elapsed}, nil
}

// watermillConsume reads the queue through a watermill-amqp subscriber with
// prefetch s.window, decodes each payload as ours does, and acknowledges it.
func watermillConsume(ctx context.Context, s settings, queue string) (result, error) {
	subscriber, err := wmamqp.NewSubscriber(watermillConfig(s.url, 0, s.window), watermill.NopLogger{})
	if err != nil {
		return result{}, fmt.Errorf("watermill subscriber: %w", err)
	}
	defer subscriber.Close()
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	messages, err := subscriber.Subscribe(subCtx, queue)
	if err != nil {
		return result{}, fmt.Errorf("watermill subscribe: %w", err)
	}
	for got := 0; got < s.consume; got++ {
		select {
		case msg, ok := <-messages:
			if !ok {
				return result{}, fmt.Errorf("watermill closed the subscription after %d messages", got)
			}
			var decoded benchMessage
			if err := json.Unmarshal(msg.Payload, &decoded); err != nil {
				return result{}, fmt.Errorf("decode: %w", err)
			}
			msg.Ack()
		case <-ctx.Done():
			return result{}, fmt.Errorf("consumed %d of %d: %w", got, s.consume, ctx.Err())
		}
	}
	return result{msgs: s.consume, elapsed: time.Since(start)}, nil
}
