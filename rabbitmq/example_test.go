package rabbitmq_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/rabbitmq"
)

// The transport is configured once with its options; New dials nothing, and
// every Connect dials a new connection. An address that does not parse is
// refused before any network is touched, and the error never quotes the
// password it carried.
func ExampleNew() {
	transport := rabbitmq.New(
		rabbitmq.Options.Address("amqp//billing:s3cret@rabbit.internal:5672/orders"), // the ':' after amqp is missing
		rabbitmq.Options.ConnectionName("billing"),
		rabbitmq.Options.BrokerTimeout(30*time.Second),
		rabbitmq.Options.Heartbeat(10*time.Second),
		rabbitmq.Options.MaxOutstandingPublishes(1000),
		rabbitmq.Options.Logger(slog.New(slog.DiscardHandler)),
	)
	defer transport.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := transport.Connect(ctx)
	fmt.Println(err)
	fmt.Println("outage:", messaging.IsOutage(err), "permanent:", messaging.IsPermanent(err))
	// Output:
	// the broker address amqp//billing:xxxxx@rabbit.internal:5672/orders is malformed (the parser's detail is withheld because it may quote the password); a password holding a reserved character must be percent-encoded ('#' as %23, '@' as %40, ':' as %3A, '/' as %2F, '?' as %3F, '%' as %25); give rabbitmq.Options.Address a URI such as amqp://user:password@host:5672/vhost
	// outage: false permanent: true
}
