package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/rabbitmq"
)

// publishers is how many goroutines each publish one message at a time, as
// request handlers of a busy service do.
const publishers = 64

// concurrentScenario: 64 goroutines each publishing one confirmed, mandatory
// message per call in a loop. Raw baselines: a channel per goroutine, and one
// channel shared by all (its confirms pipelined). Ours: one transport Writer
// shared by all (safe for concurrent Write, its confirms pipelined on one
// channel) and one batch.Writer shared by all.
func concurrentScenario(s settings) scenario {
	body := make([]byte, s.size)
	return scenario{name: "concurrent", sides: []side{
		{name: "raw-per-goroutine", run: func(ctx context.Context, queue string) (measurement, error) {
			return rawConcurrent(ctx, s, queue, body, false, false)
		}},
		{name: "raw-shared", run: func(ctx context.Context, queue string) (measurement, error) {
			return rawConcurrent(ctx, s, queue, body, true, false)
		}},
		{name: "raw-shared+envelope", baseline: "raw-shared", run: func(ctx context.Context, queue string) (measurement, error) {
			return rawConcurrent(ctx, s, queue, body, true, true)
		}},
		{name: "writer-shared", baseline: "raw-shared", run: func(ctx context.Context, queue string) (measurement, error) {
			transport := rabbitmq.New(rabbitmq.Options.Address(s.url), rabbitmq.Options.MaxOutstandingPublishes(s.window))
			defer transport.Close()
			conn, err := transport.Connect(ctx)
			if err != nil {
				return measurement{}, err
			}
			defer conn.Close()
			writer, err := conn.Writer(ctx)
			if err != nil {
				return measurement{}, err
			}
			defer writer.Close()
			return oursConcurrent(ctx, s, queue, body, writer)
		}},
		{name: "batch-shared", baseline: "raw-shared", run: func(ctx context.Context, queue string) (measurement, error) {
			transport := rabbitmq.New(rabbitmq.Options.Address(s.url), rabbitmq.Options.MaxOutstandingPublishes(s.window))
			defer transport.Close()
			writer := batch.New(transport)
			defer writer.Close()
			return oursConcurrent(ctx, s, queue, body, writer)
		}},
	}}
}

func oursConcurrent(ctx context.Context, s settings, queue string, body []byte, writer messaging.Writer) (measurement, error) {
	return eachPublisher(s, func(int) error {
		_, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: queue, Mandatory: true, ContentType: "application/octet-stream", Payload: body})
		return err
	})
}

// rawConcurrent is the same loop with amqp091-go: each goroutine on its own
// confirm channel, or all on one (the client pipelines their confirms); with
// envelope, each message carries the x-acemq-* envelope ours writes. Every
// channel is open before the first goroutine starts.
func rawConcurrent(ctx context.Context, s settings, queue string, body []byte, shared, envelope bool) (measurement, error) {
	conn, err := amqp.Dial(s.url)
	if err != nil {
		return measurement{}, err
	}
	defer conn.Close()
	channels := make([]*amqp.Channel, publishers)
	for i := range channels {
		if shared && i > 0 {
			channels[i] = channels[0]
			continue
		}
		if channels[i], err = conn.Channel(); err != nil {
			return measurement{}, err
		}
		if err := channels[i].Confirm(false); err != nil {
			return measurement{}, err
		}
	}
	return eachPublisher(s, func(i int) error {
		publishing := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream", Body: body}
		if envelope {
			addEnvelope(&publishing, messaging.NewID(), queue)
		}
		c, err := channels[i].PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, publishing)
		if err != nil {
			return err
		}
		ok, err := c.WaitContext(ctx)
		if err == nil && !ok {
			err = fmt.Errorf("raw concurrent publish: nacked")
		}
		return err
	})
}

// eachPublisher runs publish (given the goroutine's index) in a loop on each
// of the publishers' goroutines for s.duration and measures how many
// succeeded; the first error stops that goroutine and is returned.
func eachPublisher(s settings, publish func(i int) error) (measurement, error) {
	var total atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	watch := startWatch()
	deadline := watch.start.Add(s.duration)
	for i := range publishers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := publish(i); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				total.Add(1)
			}
		})
	}
	wg.Wait()
	m := watch.stop(int(total.Load()))
	if err := first.Load(); err != nil {
		return m, *err
	}
	return m, nil
}
