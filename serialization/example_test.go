package serialization_test

import (
	"context"
	"fmt"
	"reflect"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/serialization"
)

type OrderPlaced struct{ OrderID uint64 }
type OrderShipped struct{ OrderID uint64 }

// The registries name each type on the wire. A service wraps the transport
// (for the consumer's decoding) and the outbox (for the handlers' encoding)
// separately, with the same registries; here one in-memory broker stands in
// for both. A write names only the Message: the type, the topic and the
// content type follow from it, and a read hands back the decoded value.
func ExampleNew() {
	readTypes := map[string]reflect.Type{"order-placed": reflect.TypeOf(OrderPlaced{})}
	writeTypes := map[reflect.Type]string{reflect.TypeOf(OrderPlaced{}): "order-placed"}

	broker := memory.New()
	defer broker.Close()
	encoded := serialization.New(broker,
		serialization.Options.ReadTypes(readTypes),
		serialization.Options.WriteTypes(writeTypes),
	)

	ctx := context.Background()
	connection, _ := encoded.Connect(ctx)
	defer connection.Close()
	reader, _ := connection.Reader(ctx)
	stream, err := reader.Stream(ctx, messaging.StreamConfig{
		StreamName: "orders.ship", Topics: []string{"order-placed"}, EstablishTopology: true, BufferCapacity: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stream.Close()

	writer, _ := connection.Writer(ctx)
	if _, err := writer.Write(ctx, messaging.Dispatch{Message: OrderPlaced{OrderID: 42}, Mandatory: true}); err != nil {
		fmt.Println(err)
		return
	}
	var delivery messaging.Delivery
	if err := stream.Read(ctx, &delivery); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(delivery.Topic, delivery.MessageType, delivery.ContentType)
	fmt.Println(string(delivery.Payload))
	fmt.Printf("%T %+v\n", delivery.Message, delivery.Message)

	// A type with no name on the wire is refused before anything is sent.
	_, err = writer.Write(ctx, messaging.Dispatch{Message: OrderShipped{OrderID: 42}})
	fmt.Println(err)
	// Output:
	// order-placed order-placed application/json
	// {"OrderID":42}
	// serialization_test.OrderPlaced {OrderID:42}
	// serialization: the message's Go type is not registered in WriteTypes: serialization_test.OrderShipped; add it to serialization.Options.WriteTypes (dispatch 1 of 1; none of them was written)
}
