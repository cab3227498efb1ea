package main

import (
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

// rawPublish publishes with the plain client for the given time: pipelined
// confirms, at most window unconfirmed, the way a careful user of amqp091-go
// would write it. It returns how many messages the broker confirmed.
//
// With envelope set, each message also carries the properties and x-acemq-*
// headers our transport writes (the wire contract), so the cost of the
// contract itself can be told apart from the cost of our code. With batch
// above zero it publishes batch messages, then waits for every one of their
// confirms before the next batch: what a Write of batch dispatches promises
// (it returns each message's answer), written with the raw client.
func rawPublish(ctx context.Context, url, queue string, body []byte, window int, d time.Duration, envelope bool, batch int) (int, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return 0, fmt.Errorf("raw publish: dial: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, fmt.Errorf("raw publish: channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return 0, fmt.Errorf("raw publish: confirm mode: %w", err)
	}
	pending := make([]*amqp.DeferredConfirmation, 0, window)
	confirmed := 0
	wait := func(c *amqp.DeferredConfirmation) error {
		ok, err := c.WaitContext(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("raw publish: nacked")
		}
		confirmed++
		return nil
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if len(pending) == window {
			if err := wait(pending[0]); err != nil {
				return confirmed, err
			}
			pending = pending[1:]
		}
		publishing := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream", Body: body}
		if envelope {
			addEnvelope(&publishing, messaging.NewID(), queue)
		}
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, publishing)
		if err != nil {
			return confirmed, fmt.Errorf("raw publish: %w", err)
		}
		pending = append(pending, c)
		if batch > 0 && len(pending) == batch {
			for _, c := range pending {
				if err := wait(c); err != nil {
					return confirmed, err
				}
			}
			pending = pending[:0]
		}
	}
	for _, c := range pending {
		if err := wait(c); err != nil {
			return confirmed, err
		}
	}
	return confirmed, nil
}

// addEnvelope gives publishing the properties and x-acemq-* headers our
// transport writes for a message id of type messageType: what the wire
// contract costs, written by hand.
func addEnvelope(publishing *amqp.Publishing, id, messageType string) {
	now := time.Now()
	publishing.MessageId, publishing.CorrelationId, publishing.Timestamp = id, id, now
	publishing.Headers = amqp.Table{
		"x-acemq-id": id, "x-acemq-type": messageType, "x-acemq-version": int32(1), "x-acemq-correlation": id,
		"x-acemq-attempt": int32(1), "x-acemq-first-seen": now.UnixMilli(), "x-acemq-origin": "acemq@bench",
	}
}

// rawConsume drains up to want messages from queue with prefetch and multiple-ack
// every ackEvery deliveries, and returns how many it consumed.
func rawConsume(ctx context.Context, url, queue string, prefetch, want int, limit time.Duration) (int, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return 0, fmt.Errorf("raw consume: dial: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, fmt.Errorf("raw consume: channel: %w", err)
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return 0, fmt.Errorf("raw consume: qos: %w", err)
	}
	deliveries, err := ch.ConsumeWithContext(ctx, queue, "bench-raw", false, false, false, false, nil)
	if err != nil {
		return 0, fmt.Errorf("raw consume: %w", err)
	}
	ackEvery := max(1, prefetch/2)
	got := 0
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var last uint64
	for got < want {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return got, fmt.Errorf("raw consume: channel closed")
			}
			got++
			last = d.DeliveryTag
			if got%ackEvery == 0 {
				if err := ch.Ack(last, true); err != nil {
					return got, err
				}
			}
		case <-timer.C:
			return got, nil
		}
	}
	if last != 0 {
		_ = ch.Ack(last, true)
	}
	return got, nil
}
