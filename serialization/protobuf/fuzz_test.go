package protobuf

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/warrenmq/messaging/serialization/internal/codectest"
)

// FuzzDeserialize: whatever the bytes, decoding into a generated message, a
// recursive one or a dynamic one never panics, and what decodes encodes again.
func FuzzDeserialize(f *testing.F) {
	order, _ := Codec{}.Serialize(orderMessage(codectest.SampleOrder()))
	nested, _ := structpb.NewStruct(map[string]any{"a": map[string]any{"b": []any{1.5, "c", nil, true}}})
	for _, seed := range []proto.Message{nested, wrapperspb.String("x"), timestamppb.Now()} {
		payload, _ := Codec{}.Serialize(seed)
		f.Add(payload)
	}
	for _, seed := range [][]byte{order, {}, {0x0a}, {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, {0xff}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var s *structpb.Struct
		var w *wrapperspb.StringValue
		for _, target := range []any{&s, &w, &timestamppb.Timestamp{}, dynamicpb.NewMessage(orderDescriptor), new(*dynamicpb.Message)} {
			if err := (Codec{}).Deserialize(payload, target); err != nil {
				continue
			}
			if m, ok := target.(proto.Message); ok {
				if _, err := (Codec{}).Serialize(m); err != nil {
					t.Fatalf("a decoded %T does not encode again: %v", m, err)
				}
			}
		}
	})
}
