package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/streams"
	"github.com/warrenmq/messaging/rabbitmq"
)

// streamScenario: reading a RabbitMQ stream queue of s.messages messages from
// its first offset with prefetch 500, through patterns/streams (start and
// close included) beside the raw client acknowledging each message. A stream
// is not drained by reading, so every round of both sides reads the same one.
func streamScenario(s settings) scenario {
	const prefetch = 500
	name := "warrenmq-bench-stream-" + messaging.NewID()[:8]
	limit := time.Minute
	setup := func(ctx context.Context) (func(), error) {
		transport := rabbitmq.New(rabbitmq.Options.Address(s.url))
		defer transport.Close()
		conn, err := transport.Connect(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		if err := streams.Declare(ctx, conn, name, streams.Retention{MaxAge: time.Hour}); err != nil {
			return nil, err
		}
		cleanup := func() { deleteQueue(s.url, name) }
		if err := preload(ctx, s, name, make([]byte, s.size)); err != nil {
			cleanup()
			return nil, err
		}
		return cleanup, nil
	}
	raw := func(ctx context.Context, _ string) (measurement, error) {
		watch := startWatch()
		n, err := rawStreamRead(s.url, name, s.messages, prefetch, limit)
		return watch.stop(n), err
	}
	ours := func(ctx context.Context, _ string) (measurement, error) {
		transport := rabbitmq.New(rabbitmq.Options.Address(s.url))
		defer transport.Close()
		var handled atomic.Int64
		done := make(chan struct{})
		want := int64(s.messages)
		handler := messaging.HandlerFunc(func(_ context.Context, messages ...any) {
			if handled.Add(int64(len(messages))) == want {
				close(done)
			}
		})
		watch := startWatch()
		reader, err := streams.Read(ctx, transport, name, handler, streams.Options.From(streams.FromFirst()), streams.Options.Prefetch(prefetch))
		if err != nil {
			return measurement{}, err
		}
		select {
		case <-done:
		case <-time.After(limit):
		}
		_ = reader.Close()
		m := watch.stop(int(handled.Load()))
		if m.msgs < s.messages {
			return m, fmt.Errorf("read %d of %d within %s", m.msgs, s.messages, limit)
		}
		return m, nil
	}
	return scenario{name: "stream", setup: setup, allocs: true, sides: []side{
		{name: "raw", run: raw},
		{name: "streams", baseline: "raw", run: ours},
	}}
}

// rawStreamRead reads total messages of stream from its first offset with
// amqp091-go, acknowledging each.
func rawStreamRead(url, stream string, total, prefetch int, limit time.Duration) (int, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return 0, err
	}
	deliveries, err := ch.Consume(stream, "", false, false, false, false, amqp.Table{streams.OffsetArgument: "first"})
	if err != nil {
		return 0, err
	}
	timeout := time.After(limit)
	for read := range total {
		select {
		case d := <-deliveries:
			if err := d.Ack(false); err != nil {
				return read, err
			}
		case <-timeout:
			return read, fmt.Errorf("the raw stream reader read %d of %d within %s", read, total, limit)
		}
	}
	return total, nil
}
