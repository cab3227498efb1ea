package avro_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/schema"
	"github.com/warrenmq/messaging/patterns/schema/avro"
	"github.com/warrenmq/messaging/serialization"
)

// Through serialization on the in-memory transport: each mode's consumer,
// registered for the codec's ContentTypes, reads its own mode's messages and
// refuses the other mode's by content type instead of decoding wrong values.
func TestEachModeTravelsThroughSerializationAndRefusesTheOther(t *testing.T) {
	orderType := reflect.TypeFor[avro.Order]()
	registry := schema.NewMemoryRegistry()
	registered, err := avro.NewRegistered(registry, avro.Options.Write(orderType, "order", avro.OrderSchema))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := avro.NewPlain(avro.OrderSchema)
	if err != nil {
		t.Fatal(err)
	}
	broker := memory.New()
	defer broker.Close()
	consumer := func(codec *avro.Codec) messaging.Connector {
		types, err := codec.ContentTypes("application/vnd.orders+avro")
		if err != nil {
			t.Fatal(err)
		}
		return serialization.New(broker, serialization.Options.AddDeserializer(codec, types...),
			serialization.Options.ReadTypes(map[string]reflect.Type{"order": orderType}))
	}
	write := map[reflect.Type]string{orderType: "order"}
	order := avro.SampleOrder()
	for _, c := range []struct {
		name             string
		publisher, other *avro.Codec
	}{{"registered", registered, plain}, {"plain", plain, registered}} {
		delivery := avro.Through(t, broker, avro.Publisher(broker, c.publisher, write), consumer(c.publisher), "avro-orders", messaging.Dispatch{Message: order})
		if delivery.ContentType != c.publisher.ContentType() || !reflect.DeepEqual(delivery.Message, order) {
			t.Fatalf("%s: content type %q, read %+v (undecodable %v)", c.name, delivery.ContentType, delivery.Message, delivery.Undecodable)
		}
		delivery = avro.Through(t, broker, avro.Publisher(broker, c.publisher, write), consumer(c.other), "avro-orders", messaging.Dispatch{Message: order})
		if delivery.Message != nil || !errors.Is(delivery.Undecodable, serialization.ErrUnknownContentType) {
			t.Fatalf("%s read by the other mode: %+v, %v", c.name, delivery.Message, delivery.Undecodable)
		}
	}
}

// A consumer registered for ContentTypes() alone reads a message published
// under a content type of the publisher's own naming that ends in +avro.
func TestAnyPlusAvroTypeIsReadWithoutListingIt(t *testing.T) {
	orderType := reflect.TypeFor[avro.Order]()
	codec, err := avro.NewPlain(avro.OrderSchema)
	if err != nil {
		t.Fatal(err)
	}
	types, err := codec.ContentTypes()
	if err != nil {
		t.Fatal(err)
	}
	payload, err := codec.Serialize(avro.SampleOrder())
	if err != nil {
		t.Fatal(err)
	}
	broker := memory.New()
	defer broker.Close()
	consumer := serialization.New(broker, serialization.Options.AddDeserializer(codec, types...),
		serialization.Options.ReadTypes(map[string]reflect.Type{"order": orderType}))
	delivery := avro.Through(t, broker, broker, consumer, "shop-orders",
		messaging.Dispatch{MessageType: "order", ContentType: "application/vnd.shop.order+avro", Payload: payload})
	if delivery.Undecodable != nil || !reflect.DeepEqual(delivery.Message, avro.SampleOrder()) {
		t.Fatalf("read %+v (undecodable %v); want the order", delivery.Message, delivery.Undecodable)
	}
}
