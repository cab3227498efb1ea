package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/request"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/streaming"
)

// requestScenario: one caller asks and waits for the answer, sequentially,
// -roundtrips times. Raw does with amqp091-go what patterns/request does: the
// request is published mandatory and confirmed to the scenario's queue, a
// responder on its own connection consumes it, publishes the reply
// (confirmed) to the caller's exclusive reply queue and acknowledges the
// request, and the caller takes the reply by correlation id and acknowledges
// it. The report gives p50 and p99 of ours as ratios to raw's in the same run.
func requestScenario(s settings) scenario {
	body, _ := json.Marshal(benchMessage{Data: strings.Repeat("x", max(0, s.size-12))})
	return scenario{
		name:   "request",
		allocs: true,
		sides: []side{
			{name: "raw", run: func(ctx context.Context, queue string) (measurement, error) {
				return rawRequestReply(ctx, s, queue, body)
			}},
			{name: "ours", baseline: "raw", run: func(ctx context.Context, queue string) (measurement, error) {
				return oursRequestReply(ctx, s, queue, body)
			}},
		},
		report: func(totals []measurement) {
			raw, ours := totals[0].latencies, totals[1].latencies
			rawP50, oursP50 := percentile(raw, 0.50), percentile(ours, 0.50)
			rawP99, oursP99 := percentile(raw, 0.99), percentile(ours, 0.99)
			fmt.Printf("# request p50 raw %s ours %s ratio %.2f; p99 raw %s ours %s ratio %.2f\n",
				rawP50.Round(time.Microsecond), oursP50.Round(time.Microsecond), durationRatio(oursP50, rawP50),
				rawP99.Round(time.Microsecond), oursP99.Round(time.Microsecond), durationRatio(oursP99, rawP99))
			printHandoffs("request", 5, "each of the two confirms passes the publisher's confirm reader; the request the responder's reader and worker; the reply the requester's reader, its worker and the hand-over to the caller")
		},
	}
}

// rawRequestReply is the request and reply of the scenario with the raw client.
func rawRequestReply(ctx context.Context, s settings, queue string, body []byte) (measurement, error) {
	stopResponder, err := startRawResponder(ctx, s, queue)
	if err != nil {
		return measurement{}, err
	}
	defer stopResponder()
	caller, err := openRawCaller(ctx, s)
	if err != nil {
		return measurement{}, err
	}
	defer caller.close()
	return timeRoundTrips(s, func(limit time.Duration) error { return caller.ask(ctx, queue, body, limit) })
}

// startRawResponder answers each request on queue from a connection of its
// own: the reply published (confirmed) to its reply-to queue, then the
// request acknowledged. stop closes the connection and waits for the loop.
func startRawResponder(ctx context.Context, s settings, queue string) (stop func(), err error) {
	conn, err := amqp.Dial(s.url)
	if err != nil {
		return nil, fmt.Errorf("raw request: cannot reach RabbitMQ: %w; `make services` starts it", err)
	}
	defer func() {
		if err != nil {
			_ = conn.Close()
		}
	}()
	responder, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("raw request: channel: %w", err)
	}
	if err := responder.Confirm(false); err != nil {
		return nil, fmt.Errorf("raw request: confirm mode: %w", err)
	}
	if err := responder.Qos(s.window, 0, false); err != nil {
		return nil, fmt.Errorf("raw request: qos: %w", err)
	}
	requests, err := responder.ConsumeWithContext(ctx, queue, "bench-responder", false, false, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("raw request: consume: %w", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for d := range requests {
			confirm, err := responder.PublishWithDeferredConfirmWithContext(ctx, "", d.ReplyTo, false, false, amqp.Publishing{
				ContentType: "application/json", CorrelationId: d.CorrelationId, Body: d.Body,
			})
			if err != nil || waitConfirm(ctx, confirm) != nil {
				return
			}
			_ = d.Ack(false)
		}
	})
	return func() {
		_ = conn.Close() // ends the responder's loop
		wg.Wait()
	}, nil
}

// rawCaller asks through a confirmed channel and takes the replies from an
// exclusive reply queue of its own connection.
type rawCaller struct {
	conn       *amqp.Connection
	publisher  *amqp.Channel
	replyQueue string
	replies    <-chan amqp.Delivery
}

func openRawCaller(ctx context.Context, s settings) (caller *rawCaller, err error) {
	conn, err := amqp.Dial(s.url)
	if err != nil {
		return nil, fmt.Errorf("raw request: cannot reach RabbitMQ: %w", err)
	}
	defer func() {
		if err != nil {
			_ = conn.Close()
		}
	}()
	publisher, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("raw request: channel: %w", err)
	}
	if err := publisher.Confirm(false); err != nil {
		return nil, fmt.Errorf("raw request: confirm mode: %w", err)
	}
	consumer, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("raw request: channel: %w", err)
	}
	replyQueue, err := consumer.QueueDeclare("", false, true, true, false, amqp.Table{"x-queue-type": "classic"})
	if err != nil {
		return nil, fmt.Errorf("raw request: declare the reply queue: %w", err)
	}
	replies, err := consumer.ConsumeWithContext(ctx, replyQueue.Name, "bench-caller", false, true, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("raw request: consume replies: %w", err)
	}
	return &rawCaller{conn: conn, publisher: publisher, replyQueue: replyQueue.Name, replies: replies}, nil
}

func (c *rawCaller) close() { _ = c.conn.Close() }

// ask publishes one request (mandatory, confirmed) and waits, within limit,
// for the reply with its correlation id, acknowledging every reply it takes.
func (c *rawCaller) ask(ctx context.Context, queue string, body []byte, limit time.Duration) error {
	correlation := messaging.NewID()
	confirm, err := c.publisher.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
		DeliveryMode: amqp.Persistent, ContentType: "application/json", Type: "bench",
		MessageId: messaging.NewID(), CorrelationId: correlation, ReplyTo: c.replyQueue,
		Headers: amqp.Table{request.HeaderReplyTo: c.replyQueue}, Body: body,
	})
	if err != nil {
		return fmt.Errorf("raw request: publish: %w", err)
	}
	if err := waitConfirm(ctx, confirm); err != nil {
		return fmt.Errorf("raw request: %w", err)
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		select {
		case d, ok := <-c.replies:
			if !ok {
				return errors.New("raw request: the broker closed the reply consumer")
			}
			if err := d.Ack(false); err != nil {
				return fmt.Errorf("raw request: ack the reply: %w", err)
			}
			if d.CorrelationId == correlation {
				return nil
			}
		case <-timer.C:
			return fmt.Errorf("raw request: no reply within %s", limit)
		}
	}
}

// oursRequestReply: request.Serve answers on the scenario's queue, and a
// request.Requester asks.
func oursRequestReply(ctx context.Context, s settings, queue string, body []byte) (measurement, error) {
	var message benchMessage
	if err := json.Unmarshal(body, &message); err != nil {
		return measurement{}, err
	}
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url))
	defer transport.Close()
	echo := func(_ context.Context, _ messaging.Delivery, m benchMessage) (benchMessage, error) { return m, nil }
	server, err := request.Serve(ctx, transport, queue, echo,
		request.Options.Subscription(
			streaming.SubscriptionOptions.EstablishTopology(false),
			streaming.SubscriptionOptions.DeadLetters(false),
			streaming.SubscriptionOptions.BufferCapacity(uint16(min(s.window, 65535)))))
	if err != nil {
		return measurement{}, fmt.Errorf("request: serve: %w", err)
	}
	defer server.Close()
	requester, err := request.NewRequester[benchMessage, benchMessage](ctx, transport, "", queue, request.Options.MessageType("bench"))
	if err != nil {
		return measurement{}, fmt.Errorf("request: requester: %w", err)
	}
	defer requester.Close()
	return timeRoundTrips(s, func(limit time.Duration) error {
		asked, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		if _, err := requester.Do(asked, message); err != nil {
			return fmt.Errorf("request: %w", err)
		}
		return nil
	})
}
