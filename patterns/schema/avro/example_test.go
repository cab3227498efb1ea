package avro_test

import (
	"context"
	"fmt"
	"reflect"

	"github.com/warrenmq/messaging/patterns/schema"
	"github.com/warrenmq/messaging/patterns/schema/avro"
)

// OrderPlaced is the publisher's message; its fields map to the schema's by
// their avro tags.
type OrderPlaced struct {
	ID       string `avro:"id"`
	Cents    int64  `avro:"cents"`
	Currency string `avro:"currency"`
}

const orderV1 = `{"type":"record","name":"OrderPlaced","namespace":"shop","fields":[
	{"name":"id","type":"string"},{"name":"cents","type":"long"}]}`

const orderV2 = `{"type":"record","name":"OrderPlaced","namespace":"shop","fields":[
	{"name":"id","type":"string"},{"name":"cents","type":"long"},
	{"name":"currency","type":"string","default":"EUR"}]}`

// ExampleNewRegistered: a publisher still on version 1 of the schema, and two
// consumers on the same registry: one reads the message as it was written,
// the other resolves it onto version 2, whose default fills the new field.
// Use schema.NewSQLRegistry in production, so every service shares it.
func ExampleNewRegistered() {
	registry := schema.NewMemoryRegistry()
	orderType := reflect.TypeFor[OrderPlaced]()
	publisher, err := avro.NewRegistered(registry, avro.Options.Write(orderType, "order.placed", orderV1))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := publisher.Register(context.Background()); err != nil { // at start-up
		fmt.Println(err)
		return
	}
	payload, _ := publisher.Serialize(OrderPlaced{ID: "o-1", Cents: 1250})
	fmt.Printf("%s: % x, then %d bytes of Avro\n", publisher.ContentType(), payload[:5], len(payload[5:]))

	asWritten, _ := avro.NewRegistered(registry)
	resolving, _ := avro.NewRegistered(registry, avro.Options.Read(orderType, orderV2))
	for _, consumer := range []*avro.Codec{asWritten, resolving} {
		var order OrderPlaced
		if err := consumer.Deserialize(payload, &order); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%+v\n", order)
	}
	// Output:
	// application/vnd.acemq.avro: 00 00 00 00 01, then 6 bytes of Avro
	// {ID:o-1 Cents:1250 Currency:}
	// {ID:o-1 Cents:1250 Currency:EUR}
}

// ExampleNewPlain: one schema both sides know, no framing and no registry.
// ContentTypes lists what to register the consumer's codec for, and refuses
// the registered mode's own type.
func ExampleNewPlain() {
	codec, err := avro.NewPlain(orderV2)
	if err != nil {
		fmt.Println(err)
		return
	}
	payload, _ := codec.Serialize(OrderPlaced{ID: "o-1", Cents: 1250, Currency: "USD"})
	var order OrderPlaced
	if err := codec.Deserialize(payload, &order); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s, %d bytes: %+v\n", codec.ContentType(), len(payload), order)

	types, _ := codec.ContentTypes("application/vnd.shop+avro")
	fmt.Println(types)
	_, err = codec.ContentTypes(avro.RegisteredContentType)
	fmt.Println(err)
	// Output:
	// avro/binary, 10 bytes: {ID:o-1 Cents:1250 Currency:USD}
	// [avro/binary application/avro +avro application/vnd.shop+avro]
	// avro: application/vnd.acemq.avro is registered Avro, each payload starting with 0x00 and a schema id, which a plain codec would read as wrong values; read it with avro.NewRegistered
}
