package avro

import (
	"context"
	"reflect"
	"testing"

	"github.com/warrenmq/messaging/patterns/schema"
	"github.com/warrenmq/messaging/serialization"
)

// BenchmarkJSON is the order every codec's benchmark uses, as JSON.
func BenchmarkJSON(b *testing.B) { benchmarkJSON(b) }

// BenchmarkAvroRegistered is the same order as registered Avro, its schema
// id cached on both sides after the first message.
func BenchmarkAvroRegistered(b *testing.B) {
	codec, err := NewRegistered(schema.NewMemoryRegistry(), Options.Write(reflect.TypeFor[Order](), "order", OrderSchema))
	if err != nil {
		b.Fatal(err)
	}
	if err := codec.Register(context.Background()); err != nil {
		b.Fatal(err)
	}
	RoundTrip(b, codec, SampleOrder(), NewOrder)
}

// BenchmarkAvroPlain is the same order as plain Avro.
func BenchmarkAvroPlain(b *testing.B) {
	codec, err := NewPlain(OrderSchema)
	if err != nil {
		b.Fatal(err)
	}
	RoundTrip(b, codec, SampleOrder(), NewOrder)
}

// BenchmarkAvroResolved reads each order through a reader schema that adds a
// field with a default, the cost of resolution.
func BenchmarkAvroResolved(b *testing.B) {
	reader := `{"type":"record","name":"Order","namespace":"bench","fields":[
		{"name":"id","type":"string"},{"name":"customer","type":"string"},{"name":"currency","type":"string"},
		{"name":"total","type":"double"},{"name":"channel","type":"string","default":"web"},
		{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
			{"name":"sku","type":"string"},{"name":"quantity","type":"int"},{"name":"price","type":"double"}]}}}]}`
	codec, err := NewRegistered(schema.NewMemoryRegistry(), Options.Write(reflect.TypeFor[Order](), "order", OrderSchema),
		Options.Read(reflect.TypeFor[Order](), reader))
	if err != nil {
		b.Fatal(err)
	}
	RoundTrip(b, codec, SampleOrder(), NewOrder)
}

func TestTheBenchmarksOrderRoundTripsSmallerThanJSON(t *testing.T) {
	codec, _ := NewPlain(OrderSchema)
	payload, err := codec.Serialize(SampleOrder())
	if err != nil {
		t.Fatal(err)
	}
	var decoded Order
	if err := codec.Deserialize(payload, &decoded); err != nil || !reflect.DeepEqual(decoded, SampleOrder()) {
		t.Fatalf("the order read back as %+v, %v", decoded, err)
	}
	if json, _ := (serialization.JSON{}).Serialize(SampleOrder()); len(payload) >= len(json) {
		t.Fatalf("the Avro order is %d bytes, its JSON %d", len(payload), len(json))
	}
}
