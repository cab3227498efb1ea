package encryption_test

import (
	"reflect"
	"testing"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/serialization/encryption"
	"github.com/warrenmq/messaging/serialization/internal/codectest"
)

// Through serialization on the in-memory transport: the publisher writes the
// encrypted content type, and a consumer that registered the codec for it
// decodes the message; one that holds another key parks it as fatal.
func TestAnEncryptedMessageTravelsThroughSerialization(t *testing.T) {
	ring, _ := encryption.NewKeyRing(encryption.Key{ID: "2026-01", Secret: make([]byte, 16)})
	other, _ := encryption.NewKeyRing(encryption.Key{ID: "2025-12", Secret: make([]byte, 16)})
	codec, _ := encryption.New(nil, ring)
	stranger, _ := encryption.New(nil, other)
	broker := memory.New()
	defer broker.Close()
	types := map[string]reflect.Type{"order": reflect.TypeOf(codectest.Order{})}
	publisher := codectest.Publisher(broker, codec, map[reflect.Type]string{reflect.TypeOf(codectest.Order{}): "order"})
	consumer := serialization.New(broker, serialization.Options.AddDeserializer(codec), serialization.Options.ReadTypes(types))
	strangers := serialization.New(broker, serialization.Options.AddDeserializer(stranger), serialization.Options.ReadTypes(types))

	order := codectest.SampleOrder()
	delivery := codectest.Through(t, broker, publisher, consumer, "encrypted-orders", messaging.Dispatch{Message: order})
	if delivery.ContentType != encryption.ContentType || delivery.Undecodable != nil {
		t.Fatalf("content type %q, undecodable %v", delivery.ContentType, delivery.Undecodable)
	}
	if !reflect.DeepEqual(delivery.Message, order) {
		t.Fatalf("read %+v, wrote %+v", delivery.Message, order)
	}

	delivery = codectest.Through(t, broker, publisher, strangers, "encrypted-orders", messaging.Dispatch{Message: order})
	if !messaging.IsFatal(delivery.Undecodable) {
		t.Fatalf("a consumer without the key should find the message fatally undecodable: %v", delivery.Undecodable)
	}
}
