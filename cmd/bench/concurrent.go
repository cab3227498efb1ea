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
	var total atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	watch := startWatch()
	deadline := watch.start.Add(s.duration)
	for range publishers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				_, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: queue, Mandatory: true, ContentType: "application/octet-stream", Payload: body})
				if err != nil {
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

// rawConcurrent is the same loop with amqp091-go: each goroutine on its own
// confirm channel, or all on one (the client pipelines their confirms); with
// envelope, each message carries the x-acemq-* envelope ours writes.
func rawConcurrent(ctx context.Context, s settings, queue string, body []byte, shared, envelope bool) (measurement, error) {
	conn, err := amqp.Dial(s.url)
	if err != nil {
		return measurement{}, err
	}
	defer conn.Close()
	open := func() (*amqp.Channel, error) {
		ch, err := conn.Channel()
		if err != nil {
			return nil, err
		}
		return ch, ch.Confirm(false)
	}
	var common *amqp.Channel
	if shared {
		if common, err = open(); err != nil {
			return measurement{}, err
		}
	}
	var total atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	watch := startWatch()
	deadline := watch.start.Add(s.duration)
	for range publishers {
		ch := common
		if !shared {
			if ch, err = open(); err != nil {
				return measurement{}, err
			}
		}
		wg.Go(func() {
			for time.Now().Before(deadline) {
				publishing := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream", Body: body}
				if envelope {
					addEnvelope(&publishing, messaging.NewID(), queue)
				}
				c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, publishing)
				if err == nil {
					var ok bool
					if ok, err = c.WaitContext(ctx); err == nil && !ok {
						err = fmt.Errorf("raw concurrent publish: nacked")
					}
				}
				if err != nil {
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
