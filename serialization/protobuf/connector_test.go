package protobuf_test

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/serialization/internal/codectest"
	"github.com/warrenmq/messaging/serialization/protobuf"
)

// Through serialization on the in-memory transport, registered by pointer
// type as JSON types are: the handler receives the generated pointer type.
func TestAProtobufMessageTravelsThroughSerialization(t *testing.T) {
	broker := memory.New()
	defer broker.Close()
	pointer := reflect.TypeFor[*structpb.Struct]()
	publisher := codectest.Publisher(broker, protobuf.Codec{}, map[reflect.Type]string{pointer: "order"})
	consumer := serialization.New(broker, serialization.Options.AddDeserializer(protobuf.Codec{}),
		serialization.Options.ReadTypes(map[string]reflect.Type{"order": pointer}))

	order, _ := structpb.NewStruct(map[string]any{"id": "o-1", "lines": []any{"a", "b"}})
	delivery := codectest.Through(t, broker, publisher, consumer, "protobuf-orders", messaging.Dispatch{Message: order})
	if delivery.ContentType != protobuf.ContentType || delivery.MessageType != "order" {
		t.Fatalf("content type %q, message type %q", delivery.ContentType, delivery.MessageType)
	}
	decoded, ok := delivery.Message.(*structpb.Struct)
	if !ok || !proto.Equal(decoded, order) {
		t.Fatalf("read %T %v (undecodable %v), wrote %v", delivery.Message, delivery.Message, delivery.Undecodable, order)
	}
}
