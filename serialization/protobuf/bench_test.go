package protobuf

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/serialization/internal/codectest"
)

// BenchmarkJSON is the order every codec's benchmark uses, as JSON.
func BenchmarkJSON(b *testing.B) { codectest.BenchmarkJSON(b) }

// BenchmarkProtobuf is the same order as a protobuf message. The message is
// dynamic (built from a descriptor, through reflection), which is slower
// than the code protoc-gen-go generates: a generated type does better.
func BenchmarkProtobuf(b *testing.B) {
	codectest.RoundTrip(b, Codec{}, orderMessage(codectest.SampleOrder()), func() any { return dynamicpb.NewMessage(orderDescriptor) })
}

func TestTheBenchmarksOrderRoundTrips(t *testing.T) {
	message := orderMessage(codectest.SampleOrder())
	payload, err := Codec{}.Serialize(message)
	if err != nil {
		t.Fatal(err)
	}
	decoded := dynamicpb.NewMessage(orderDescriptor)
	if err := (Codec{}).Deserialize(payload, decoded); err != nil || !proto.Equal(decoded, message) {
		t.Fatalf("the order read back as %v, %v", decoded, err)
	}
	if json, _ := (serialization.JSON{}).Serialize(codectest.SampleOrder()); len(payload) >= len(json) {
		t.Fatalf("the protobuf order is %d bytes, its JSON %d", len(payload), len(json))
	}
}
