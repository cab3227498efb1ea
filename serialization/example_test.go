package serialization_test

import (
	"reflect"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/serialization"
)

type OrderPlaced struct{ OrderID uint64 }
type OrderShipped struct{ OrderID uint64 }

// Wrap the transport (for the consumer's decoding) and the outbox (for the
// handlers' encoding) separately, with the same registries.
func ExampleNew() {
	var transport, outbox messaging.Connector // rabbitmq.New(...), sqlmq.New(...)

	readTypes := map[string]reflect.Type{"order-placed": reflect.TypeOf(OrderPlaced{})}
	writeTypes := map[reflect.Type]string{reflect.TypeOf(OrderShipped{}): "order-shipped"}
	encodedTransport := serialization.New(transport,
		serialization.Options.ReadTypes(readTypes),
		serialization.Options.WriteTypes(writeTypes),
	)
	encodedOutbox := serialization.New(outbox,
		serialization.Options.ReadTypes(readTypes),
		serialization.Options.WriteTypes(writeTypes),
	)
	_, _ = encodedTransport, encodedOutbox
}
