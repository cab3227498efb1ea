package batch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// After the broker closes every connection, the writer finds its kept
// connection closed and dials again: the next write lands, or (when the
// broker's close reached the client only after the publish was sent, so its
// arrival is unknown) the one after it does. No wait between them is needed.
func TestWriterRedialsAfterTheBrokerClosedItsConnection(t *testing.T) {
	url := testenv.Disrupt(t)
	queue := declareQueue(t, url)
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.ConnectionName("batch-redial-test"))
	defer transport.Close()
	writer := New(transport)
	defer writer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	dispatch := messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: []byte("before")}
	if _, err := writer.Write(ctx, dispatch); err != nil {
		t.Fatalf("first write: %v", err)
	}

	testenv.Rabbitmqctl(t, "close_all_connections", "test: batch writer redial")

	n, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: []byte("after")})
	if err != nil {
		if !messaging.IsConnectionLost(err) {
			t.Fatalf("the write after close_all_connections failed with %v; want it to land, or to fail as a lost connection", err)
		}
		if n, err = writer.Write(ctx, messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: []byte("after")}); err != nil {
			t.Fatalf("the writer did not recover after close_all_connections: %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("the write after the close landed %d messages, want 1", n)
	}
	if got := countMessages(t, url, queue); got < 2 || got > 3 {
		t.Fatalf("want 2 messages in the queue (3 if the lost publish arrived), got %d", got)
	}
}

// A publish to a missing exchange fails with a clear error, and the writer is
// usable again afterwards.
func TestWriterRecoversFromAMissingExchange(t *testing.T) {
	url := testenv.Broker(t)
	queue := declareQueue(t, url)
	transport := rabbitmq.New(rabbitmq.Options.Address(url))
	defer transport.Close()
	writer := New(transport)
	defer writer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	missing := testenv.Name(t, "no-such-exchange")
	_, err := writer.Write(ctx, messaging.Dispatch{Topic: missing, RoutingKey: "x", Mandatory: true, Payload: []byte("lost?")})
	if err == nil {
		t.Fatal("a publish to a missing exchange should fail")
	}
	var amqpErr *amqp.Error
	if !errors.As(err, &amqpErr) || amqpErr.Code != amqp.NotFound {
		t.Fatalf("want the broker's 404 NOT_FOUND in the error, got %v", err)
	}
	if _, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: []byte("fine")}); err != nil {
		t.Fatalf("the writer did not recover: %v", err)
	}
	if got := countMessages(t, url, queue); got != 1 {
		t.Fatalf("want 1 message in the queue, got %d", got)
	}
}

// An unroutable mandatory publish is an error naming the exchange, the key and
// 312 NO_ROUTE, and the message is not counted as landed.
func TestWriterReportsUnroutable(t *testing.T) {
	url := testenv.Broker(t)
	transport := rabbitmq.New(rabbitmq.Options.Address(url))
	defer transport.Close()
	writer := New(transport)
	defer writer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := testenv.Name(t, "nobody-bound")
	n, err := writer.Write(ctx, messaging.Dispatch{Topic: "amq.direct", RoutingKey: key, Mandatory: true, Payload: []byte("x")})
	if n != 0 || !errors.Is(err, messaging.ErrUnroutable) {
		t.Fatalf("want 0 landed and ErrUnroutable, got %d, %v", n, err)
	}
	for _, want := range []string{`"amq.direct"`, key, "312", "NO_ROUTE"} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func declareQueue(t *testing.T, url string) string {
	t.Helper()
	queue := testenv.Name(t, "batch")
	withChannel(t, url, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(queue, true, false, false, false, nil)
		return err
	})
	t.Cleanup(func() {
		withChannel(t, url, func(ch *amqp.Channel) error {
			_, err := ch.QueueDelete(queue, false, false, false)
			return err
		})
	})
	return queue
}

func countMessages(t *testing.T, url, queue string) int {
	t.Helper()
	var count int
	withChannel(t, url, func(ch *amqp.Channel) error {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		count = q.Messages
		return err
	})
	return count
}

func withChannel(t *testing.T, url string, f func(*amqp.Channel) error) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := f(ch); err != nil {
		t.Fatal(err)
	}
}
