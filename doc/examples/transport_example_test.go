package examples_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/rabbitmq"
)

// Example_transport publishes through RabbitMQ with the batch writer: one
// call is one confirmed publish, and after any failure the next call redials.
// It needs a broker, so it only compiles under `go test` (it has no Output).
func Example_transport() {
	transport := rabbitmq.New(
		rabbitmq.Options.Address("amqp://guest:guest@127.0.0.1:5672/"),
		rabbitmq.Options.ConnectionName("billing"),
		rabbitmq.Options.BrokerTimeout(30*time.Second),
		rabbitmq.Options.Heartbeat(10*time.Second),
		rabbitmq.Options.MaxOutstandingPublishes(1000),
		rabbitmq.Options.Logger(slog.Default()),
	)
	defer transport.Close()

	writer := batch.New(transport)
	defer writer.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	landed, err := writer.Write(ctx,
		messaging.Dispatch{Topic: "amq.direct", RoutingKey: "invoices", MessageType: "invoice-requested", Payload: []byte("o-7"), Mandatory: true},
		messaging.Dispatch{Topic: "amq.direct", RoutingKey: "invoices", MessageType: "invoice-requested", Payload: []byte("o-8"), Mandatory: true, Expiration: time.Minute},
	)
	switch {
	case err == nil:
		fmt.Println("confirmed and routed:", landed)
	case errors.Is(err, messaging.ErrUnroutable):
		fmt.Println("no queue is bound to amq.direct/invoices:", err)
	case errors.Is(err, messaging.ErrPublishingPaused):
		fmt.Println("the broker has an alarm; publishing is paused:", err)
	case errors.Is(err, messaging.ErrCommitTimeout):
		fmt.Println("no confirm within the broker timeout; the connection was severed:", err)
	default:
		fmt.Println("not published; the next Write redials:", err)
	}
}
