package examples_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/serialization"
)

// PriceChanged is a message this service both writes and reads.
type PriceChanged struct {
	SKU   string `json:"sku"`
	Cents int    `json:"cents"`
}

// Example_serialization encodes a typed message on write (the Topic defaults
// to its wire type name) and decodes it on read; a payload that does not
// decode is still read, with a nil Message and Undecodable saying why.
func Example_serialization() {
	ctx := context.Background()
	broker := memory.New()
	defer broker.Close()
	_ = broker.DeclareExchange("price-changed", memory.KindFanout, true)
	_ = broker.DeclareQueue("catalog", memory.QueueOptions{Durable: true})
	_ = broker.Bind("catalog", "price-changed", "")

	encoded := serialization.New(broker,
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(PriceChanged{}): "price-changed"}),
		serialization.Options.ReadTypes(map[string]reflect.Type{"price-changed": reflect.TypeOf(PriceChanged{})}),
		serialization.Options.Logger(quiet),
	)
	connection, err := encoded.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer connection.Close()
	writer, err := connection.Writer(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer writer.Close()

	// Only Message is needed: type, content type, payload and topic follow.
	if _, err := writer.Write(ctx, messaging.Dispatch{Message: PriceChanged{SKU: "lamp", Cents: 1999}, Mandatory: true}); err != nil {
		fmt.Println(err)
		return
	}
	// A producer that sends something else under the same type name.
	_ = broker.Publish(ctx, messaging.Dispatch{Topic: "price-changed", MessageType: "price-changed", ContentType: "application/json", Payload: []byte("not json")})
	// A Go type nobody registered is refused before anything is written.
	_, err = writer.Write(ctx, messaging.Dispatch{Message: struct{ Secret string }{"x"}})
	fmt.Println("unregistered write type:", errors.Is(err, serialization.ErrUnknownWriteType))

	reader, err := connection.Reader(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reader.Close()
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: "catalog", BufferCapacity: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stream.Close()
	for range 2 {
		var delivery messaging.Delivery
		if err := stream.Read(ctx, &delivery); err != nil {
			fmt.Println(err)
			return
		}
		if delivery.Undecodable != nil {
			fmt.Println("undecodable:", errors.Is(delivery.Undecodable, serialization.ErrDeserialization), delivery.Message)
		} else {
			fmt.Printf("decoded %s: %+v (%s)\n", delivery.MessageType, delivery.Message, delivery.ContentType)
		}
		_ = stream.Acknowledge(ctx, delivery)
	}

	// Output:
	// unregistered write type: true
	// decoded price-changed: {SKU:lamp Cents:1999} (application/json)
	// undecodable: true <nil>
}
