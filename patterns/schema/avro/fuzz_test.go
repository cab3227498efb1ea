package avro

import (
	"context"
	"testing"

	"github.com/warrenmq/messaging/patterns/schema"
)

// FuzzDeserialize: whatever the bytes, neither mode panics or allocates
// beyond MaxValueBytes, into a struct, a map or through a resolution, and
// what decodes encodes again.
func FuzzDeserialize(f *testing.F) {
	registry := schema.NewMemoryRegistry()
	writer, _ := NewRegistered(registry, Options.Write(typeV1, "order", schemaV1), Options.Write(typeV2, "order", schemaV2))
	_ = writer.Register(context.Background())
	readers := []*Codec{writer}
	resolving, _ := NewRegistered(registry, Options.Read(typeV2, schemaV2), Options.Read(typeV1, schemaV1))
	readers = append(readers, resolving)
	for _, definition := range []string{schemaV1, schemaV2, OrderSchema, `["null","string",{"type":"map","values":"long"}]`} {
		plain, _ := NewPlain(definition)
		readers = append(readers, plain)
	}
	v1, _ := writer.Serialize(orderV1{ID: "o-1", Total: 4200})
	v2, _ := writer.Serialize(orderV2{ID: "o-1", Total: 4200, Currency: "USD", Note: "gift"})
	for _, seed := range [][]byte{v1, v2, v1[5:], v2[5:], {}, {0x00}, {0x00, 0x00, 0x00, 0x00, 0x01}, {0x00, 0x7f, 0xff, 0xff, 0xff, 0x02}, {0xfe, 0xff, 0xff, 0xff, 0x0f}, {0x01, 0x02}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, reader := range readers {
			targets := []any{new(orderV1), new(orderV2), new(Order), new(map[string]any), new(any)}
			for _, target := range targets {
				if reader.Deserialize(payload, target) != nil {
					continue
				}
				if order, ok := target.(*orderV1); ok {
					if _, err := writer.Serialize(*order); err != nil {
						t.Fatalf("a decoded %+v does not encode again: %v", *order, err)
					}
				}
			}
		}
	})
}
