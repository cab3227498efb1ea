package serialization

import (
	"context"
	"reflect"
	"testing"

	"github.com/warrenmq/messaging"
)

// FuzzJSONDeserializer: the default deserializer never panics, whatever the
// bytes and whatever the target type.
func FuzzJSONDeserializer(f *testing.F) {
	for _, seed := range []string{``, `{}`, `null`, `{"OrderID":1}`, `{"OrderID":-1}`, `[1,2`, "\xff\xfe", `{"Note":"\u0000"}`, `1e999`} {
		f.Add([]byte(seed))
	}
	targets := []reflect.Type{
		reflect.TypeOf(orderPlaced{}), reflect.TypeOf(&orderShipped{}), reflect.TypeOf(map[string]any{}),
		reflect.TypeOf([]int{}), reflect.TypeOf(""), reflect.TypeOf((*any)(nil)).Elem(), reflect.TypeOf(uint8(0)),
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, target := range targets {
			_ = JSON{}.Deserialize(payload, reflect.New(target).Interface())
		}
		_ = JSON{}.Deserialize(payload, nil)
		_ = JSON{}.Deserialize(payload, orderPlaced{})
	})
}

// FuzzRead: the decoding stream never panics and never fails Read on any
// message type, content type or payload; a delivery either decodes or says why
// not.
func FuzzRead(f *testing.F) {
	f.Add("order-placed", "application/json", []byte(`{"OrderID":1}`))
	f.Add("order-placed", "", []byte(`{"OrderID":"x"}`))
	f.Add("order-shipped", "application/json; charset=utf-8", []byte(`null`))
	f.Add("unknown", "application/xml", []byte(`<x/>`))
	f.Add("", ";;;", []byte{0xff})
	f.Fuzz(func(t *testing.T, messageType, contentType string, payload []byte) {
		inner := newFakeConnector()
		for range 2 {
			inner.connection.reader.stream.deliveries = append(inner.connection.reader.stream.deliveries, messaging.Delivery{
				MessageType: messageType, ContentType: contentType, Payload: payload,
			})
		}
		for _, ignore := range []bool{false, true} {
			connector := New(inner,
				Options.ReadTypes(map[string]reflect.Type{
					"order-placed":  reflect.TypeOf(orderPlaced{}),
					"order-shipped": reflect.TypeOf(&orderShipped{}),
					messageType:     reflect.TypeOf(map[string]any{}),
				}),
				Options.IgnoreUnknownMessageTypes(ignore),
				Options.IgnoreUnknownContentTypes(ignore),
				Options.IgnoreDeserializationErrors(ignore),
				Options.Logger(discardLogger),
			)
			connection, _ := connector.Connect(context.Background())
			reader, _ := connection.Reader(context.Background())
			stream, _ := reader.Stream(context.Background(), messaging.StreamConfig{})
			var delivery messaging.Delivery
			if err := stream.Read(context.Background(), &delivery); err != nil {
				t.Fatalf("Read failed: %v", err)
			}
			if delivery.Message != nil && delivery.Undecodable != nil {
				t.Fatalf("both a Message and an Undecodable: %v", delivery.Undecodable)
			}
			if ignore && delivery.Undecodable != nil {
				t.Fatalf("ignoring every failure, yet undecodable: %v", delivery.Undecodable)
			}
			if !ignore && delivery.Message == nil && delivery.Undecodable == nil && string(payload) != "null" {
				t.Fatalf("neither decoded nor undecodable: %q %q %q", messageType, contentType, payload)
			}
		}
	})
}
