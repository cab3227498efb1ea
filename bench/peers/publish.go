package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/rabbitmq"
)

// perCall is how many messages ours and watermill hand over per call, the
// shape of `make bench`'s publish/batch-100.
const perCall = 100

// publishScenario: s.publish persistent, mandatory messages confirmed by the
// broker into one durable queue, three ways.
func publishScenario(s settings) scenario {
	body := make([]byte, s.size)
	return scenario{name: "publish", sides: []side{
		{name: "raw", role: isBaseline, run: func(ctx context.Context, queue string) (result, error) {
			return rawPublish(ctx, s, queue, body)
		}},
		{name: "ours-batch-100", role: isOurs, run: func(ctx context.Context, queue string) (result, error) {
			return oursPublish(ctx, s, queue, body)
		}},
		{name: "watermill", role: isWatermill, run: func(ctx context.Context, queue string) (result, error) {
			return watermillPublish(ctx, s, queue, body, 1)
		}},
		{name: "watermill-16", role: isWatermill, run: func(ctx context.Context, queue string) (result, error) {
			return watermillPublish(ctx, s, queue, body, 16)
		}},
	}}
}

// rawPublish is amqp091-go used with care: one confirm-mode channel, at most
// s.window unconfirmed, waiting for the oldest confirm when the window is full.
func rawPublish(ctx context.Context, s settings, queue string, body []byte) (result, error) {
	conn, ch, err := open(s.url, true)
	if err != nil {
		return result{}, err
	}
	defer conn.Close()
	pending := make([]*amqp.DeferredConfirmation, 0, s.window)
	start := time.Now()
	for range s.publish {
		if len(pending) == s.window {
			if err := confirmed(ctx, pending[:1]); err != nil {
				return result{}, err
			}
			pending = pending[1:]
		}
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false,
			amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream", Body: body})
		if err != nil {
			return result{}, fmt.Errorf("publish: %w", err)
		}
		pending = append(pending, c)
	}
	if err := confirmed(ctx, pending); err != nil {
		return result{}, err
	}
	return result{msgs: s.publish, elapsed: time.Since(start)}, nil
}

// confirmed waits, within ctx, for the broker to confirm every publish.
func confirmed(ctx context.Context, pending []*amqp.DeferredConfirmation) error {
	for _, c := range pending {
		ok, err := c.WaitContext(ctx)
		if err != nil {
			return fmt.Errorf("wait for a confirm (is the broker under an alarm?): %w", err)
		}
		if !ok {
			return fmt.Errorf("the broker refused a publish (nack); see its log")
		}
	}
	return nil
}

// oursPublish is batch.Writer over the rabbitmq transport, 100 mandatory
// dispatches per call, as `make bench` runs publish/batch-100.
func oursPublish(ctx context.Context, s settings, queue string, body []byte) (result, error) {
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url), rabbitmq.Options.MaxOutstandingPublishes(s.window))
	defer transport.Close()
	writer := batch.New(transport)
	defer writer.Close()
	dispatches := make([]messaging.Dispatch, perCall)
	for i := range dispatches {
		dispatches[i] = messaging.Dispatch{RoutingKey: queue, Mandatory: true, ContentType: "application/octet-stream", Payload: body}
	}
	start := time.Now()
	written := 0
	for written < s.publish {
		n, err := writer.Write(ctx, dispatches[:min(perCall, s.publish-written)]...)
		written += n
		if err != nil {
			return result{}, fmt.Errorf("write: %w", err)
		}
	}
	return result{msgs: written, elapsed: time.Since(start)}, nil
}

// watermillConfig is watermill-amqp's durable queue configuration (durable
// queue, persistent messages, the default exchange routing to the queue named
// by the topic) with what its docs advise for reliability: publisher confirms.
// Its Publish waits for each message's confirm before it sends the next, so
// pool channels let that many publishing goroutines overlap their waits.
func watermillConfig(url string, pool, prefetch int) wmamqp.Config {
	config := wmamqp.NewDurableQueueConfig(url)
	config.Publish.ConfirmDelivery = true
	config.Publish.Mandatory = true
	config.Publish.ChannelPoolSize = pool
	config.Consume.Qos.PrefetchCount = prefetch
	return config
}

// watermillPublish publishes s.publish messages through one watermill-amqp
// publisher from workers goroutines, each on a pooled channel of its own,
// 100 messages per Publish call.
func watermillPublish(ctx context.Context, s settings, queue string, body []byte, workers int) (result, error) {
	publisher, err := wmamqp.NewPublisher(watermillConfig(s.url, workers, 0), watermill.NopLogger{})
	if err != nil {
		return result{}, fmt.Errorf("watermill publisher: %w", err)
	}
	// Publish has no context: closing the publisher is what ends its waits.
	stop := context.AfterFunc(ctx, func() { _ = publisher.Close() })
	defer func() {
		if stop() {
			_ = publisher.Close()
		}
	}()
	start := time.Now()
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		share := s.publish / workers
		if w == 0 {
			share += s.publish % workers
		}
		wg.Go(func() {
			for share > 0 && errs[w] == nil {
				messages := make([]*message.Message, min(perCall, share))
				for i := range messages {
					messages[i] = message.NewMessage(watermill.NewUUID(), body)
				}
				errs[w] = publisher.Publish(queue, messages...)
				share -= len(messages)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return result{}, fmt.Errorf("watermill publish: %w", err)
		}
	}
	if ctx.Err() != nil {
		return result{}, fmt.Errorf("watermill publish: %w", ctx.Err())
	}
	return result{msgs: s.publish, elapsed: elapsed}, nil
}
