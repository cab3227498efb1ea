package faults

import (
	"net"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The checker talks to the broker with the raw client: it declares what a
// scenario needs, counts what reached a queue, and deletes it all at the end. It
// is the neutral observer, not the code under test.

// checkerName is the connection name of the checker's own connections, so they
// are never mistaken for the library's.
const checkerName = "warrenmq-fault-checker"

// dialChecker opens a raw connection and channel, failing the test on error.
func dialChecker(t *testing.T, url string) (*amqp.Connection, *amqp.Channel) {
	t.Helper()
	properties := amqp.NewConnectionProperties()
	properties.SetClientConnectionName(checkerName)
	conn, err := amqp.DialConfig(url, amqp.Config{
		Properties: properties,
		Dial:       amqp.DefaultDial(10 * time.Second),
	})
	if err != nil {
		t.Fatalf("checker: dial the broker at %s: %v; is RabbitMQ running? `make services` starts it", url, err)
	}
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		t.Fatalf("checker: open a channel: %v", err)
	}
	return conn, ch
}

// declareQueue declares a durable classic queue, optionally bound to a new
// durable direct exchange under routing key "fault", and deletes both when the
// test ends (through a fresh connection, since the scenario may have closed
// every connection).
func declareQueue(t *testing.T, url, queue, exchange string) {
	t.Helper()
	conn, ch := dialChecker(t, url)
	defer func() { _ = conn.Close() }()
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatalf("checker: declare queue %s: %v", queue, err)
	}
	if exchange != "" {
		if err := ch.ExchangeDeclare(exchange, "direct", true, false, false, false, nil); err != nil {
			t.Fatalf("checker: declare exchange %s: %v", exchange, err)
		}
		if err := ch.QueueBind(queue, "fault", exchange, false, nil); err != nil {
			t.Fatalf("checker: bind queue %s to %s: %v", queue, exchange, err)
		}
	}
	t.Cleanup(func() {
		conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(10 * time.Second)})
		if err != nil {
			t.Errorf("checker: dial to delete %s: %v", queue, err)
			return
		}
		defer func() { _ = conn.Close() }()
		ch, err := conn.Channel()
		if err != nil {
			t.Errorf("checker: open a channel to delete %s: %v", queue, err)
			return
		}
		if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
			t.Errorf("checker: delete queue %s: %v", queue, err)
		}
		if exchange != "" {
			if err := ch.ExchangeDelete(exchange, false, false); err != nil {
				t.Errorf("checker: delete exchange %s: %v", exchange, err)
			}
		}
	})
}

// drain consumes everything in queue, counting each message id as handled,
// until the queue is empty and nothing arrived for a second (bounded to two
// minutes). Messages are acknowledged on receipt.
func drain(t *testing.T, url, queue string, tl *tally) {
	t.Helper()
	drainEach(t, url, queue, func(d amqp.Delivery) { tl.handle(d.MessageId) })
}

// drainEach is drain handing each message to receive.
func drainEach(t *testing.T, url, queue string, receive func(amqp.Delivery)) {
	t.Helper()
	conn, ch := dialChecker(t, url)
	defer func() { _ = conn.Close() }()
	if err := ch.Qos(2000, 0, false); err != nil {
		t.Fatalf("checker: set prefetch: %v", err)
	}
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatalf("checker: consume %s: %v", queue, err)
	}
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case d, ok := <-deliveries:
			if !ok {
				t.Fatalf("checker: the consumer of %s ended early", queue)
			}
			receive(d)
			continue
		case <-time.After(time.Second):
		case <-deadline:
			t.Fatalf("checker: %s was not drained within two minutes", queue)
		}
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			t.Fatalf("checker: inspect %s: %v", queue, err)
		}
		if q.Messages == 0 {
			return
		}
	}
}

// brokerAnswers reports whether an AMQP handshake with the broker succeeds.
func brokerAnswers(url string) bool {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(3 * time.Second)})
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// portOpen reports whether something accepts TCP connections at address.
func portOpen(address string) bool {
	conn, err := net.DialTimeout("tcp", address, time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
