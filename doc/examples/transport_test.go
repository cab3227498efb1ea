package examples_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// TestTransport publishes through RabbitMQ with the batch writer: one call is
// one confirmed publish, a mandatory message that reaches no queue fails alone
// and keeps the connection, and after a failure that broke the connection the
// next call redials. It needs the local broker, so it is a test rather than an
// Example (the memory transport's Example shows the same calls without one).
func TestTransport(t *testing.T) {
	url := testenv.Broker(t)
	queue := "transport-doc-" + messaging.NewID()[:8]
	t.Cleanup(func() {
		if err := testenv.DeleteTopology(url, nil, queue); err != nil {
			t.Log(err)
		}
	})

	transport := rabbitmq.New(
		rabbitmq.Options.Address(url),
		rabbitmq.Options.ConnectionName("billing"),
		rabbitmq.Options.BrokerTimeout(30*time.Second),
		rabbitmq.Options.Heartbeat(10*time.Second),
		rabbitmq.Options.MaxOutstandingPublishes(1000),
		rabbitmq.Options.Logger(quiet),
	)
	defer transport.Close()

	writer := batch.New(transport)
	defer writer.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := writer.Declare(ctx, queue, func(ctx context.Context, connection messaging.Connection) error {
		declarer, ok := messaging.As[messaging.Declarer](connection)
		if !ok {
			return errors.New("the transport cannot declare")
		}
		if err := declarer.DeclareQueue(ctx, messaging.Queue{Name: queue, Durable: true}); err != nil {
			return err
		}
		return declarer.Bind(ctx, messaging.Binding{Exchange: "amq.direct", Queue: queue, Key: queue})
	})
	if err != nil {
		t.Fatal(err)
	}

	landed, err := writer.Write(ctx,
		messaging.Dispatch{Topic: "amq.direct", RoutingKey: queue, MessageType: "invoice-requested", Payload: []byte("o-7"), Mandatory: true},
		messaging.Dispatch{Topic: "amq.direct", RoutingKey: queue, MessageType: "invoice-requested", Payload: []byte("o-8"), Mandatory: true, Expiration: time.Minute},
	)
	if landed != 2 || err != nil {
		t.Fatalf("want both confirmed and routed, got %d: %s", landed, explain(err))
	}

	landed, err = writer.Write(ctx, messaging.Dispatch{Topic: "amq.direct", RoutingKey: queue + ".nobody", Payload: []byte("o-9"), Mandatory: true})
	if landed != 0 || !errors.Is(err, messaging.ErrUnroutable) {
		t.Fatalf("want the unroutable message refused alone, got %d: %s", landed, explain(err))
	}
	landed, err = writer.Write(ctx, messaging.Dispatch{Topic: "amq.direct", RoutingKey: queue, Payload: []byte("o-10"), Mandatory: true})
	if landed != 1 || err != nil {
		t.Fatalf("want the writer to keep publishing after a verdict on one message, got %d: %s", landed, explain(err))
	}
}

// explain is what a caller of batch.Writer.Write does with its error: each
// failure has a sentinel, and only a lost connection is dialled again.
func explain(err error) string {
	switch {
	case err == nil:
		return "confirmed and routed"
	case errors.Is(err, messaging.ErrUnroutable):
		return fmt.Sprintf("no queue is bound to the key: %v", err)
	case errors.Is(err, messaging.ErrPublishingPaused):
		return fmt.Sprintf("the broker has an alarm; publishing is paused: %v", err)
	case errors.Is(err, messaging.ErrPublishTimeout):
		return fmt.Sprintf("no confirm within the broker timeout; the connection was severed: %v", err)
	default:
		return fmt.Sprintf("not published; the next Write redials: %v", err)
	}
}
