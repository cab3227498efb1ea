package avro

// The codec tests' shared pieces, as the other codecs' tests have them in
// serialization/internal/codectest (which this package, beside the schema
// registry, cannot import): the benchmark order and a trip through
// serialization on the in-memory transport.

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/serialization"
)

// pairCodec is a serializer and deserializer pair, the shape of every codec.
type pairCodec interface {
	serialization.Serializer
	serialization.Deserializer
}

// Order is the message every codec's benchmark encodes and decodes: a few
// fields and five lines, some hundreds of bytes of JSON.
type Order struct {
	ID       string  `json:"id" avro:"id"`
	Customer string  `json:"customer" avro:"customer"`
	Currency string  `json:"currency" avro:"currency"`
	Total    float64 `json:"total" avro:"total"`
	Lines    []Line  `json:"lines" avro:"lines"`
}

// Line is one line of an Order.
type Line struct {
	SKU      string  `json:"sku" avro:"sku"`
	Quantity int     `json:"quantity" avro:"quantity"`
	Price    float64 `json:"price" avro:"price"`
}

// OrderSchema is Order's Avro schema.
const OrderSchema = `{"type":"record","name":"Order","namespace":"bench","fields":[
	{"name":"id","type":"string"},
	{"name":"customer","type":"string"},
	{"name":"currency","type":"string"},
	{"name":"total","type":"double"},
	{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
		{"name":"sku","type":"string"},
		{"name":"quantity","type":"int"},
		{"name":"price","type":"double"}]}}}]}`

// SampleOrder returns the benchmarks' order.
func SampleOrder() Order {
	o := Order{ID: "9b2f0c1e-4d7a-4a51-8f0e-2c6d1f3b7a90", Customer: "customer-1234", Currency: "EUR", Total: 129.5}
	for i := range 5 {
		o.Lines = append(o.Lines, Line{SKU: "SKU-000" + string(rune('0'+i)), Quantity: i + 1, Price: 12.95})
	}
	return o
}

// RoundTrip encodes message and decodes it into a new target with codec, b.N
// times: what a message costs between a publisher and a handler.
func RoundTrip(b *testing.B, codec pairCodec, message any, target func() any) {
	b.ReportAllocs()
	for b.Loop() {
		payload, err := codec.Serialize(message)
		if err != nil {
			b.Fatal(err)
		}
		if err := codec.Deserialize(payload, target()); err != nil {
			b.Fatal(err)
		}
	}
}

// Publisher returns a serialization connector over broker that writes with
// serializer the types named, each to the queue named by the dispatch's
// RoutingKey (the default exchange).
func Publisher(broker *memory.Broker, serializer serialization.Serializer, types map[reflect.Type]string) messaging.Connector {
	return serialization.New(broker, serialization.Options.Serializer(serializer),
		serialization.Options.WriteTypes(types), serialization.Options.TopicFromType(false))
}

// NewOrder returns a pointer to a zero Order, a RoundTrip target.
func NewOrder() any { return new(Order) }

// benchmarkJSON is RoundTrip of SampleOrder with serialization.JSON, the line
// each codec's benchmarks stand beside.
func benchmarkJSON(b *testing.B) {
	RoundTrip(b, serialization.JSON{}, SampleOrder(), NewOrder)
}

// Through publishes dispatch through publisher (see Publisher) and reads it
// back through consumer, a serialization connector over the same broker,
// from queue (which it declares): the delivery as the consumer's stream
// returned it, decoded or marked undecodable, and acknowledged.
func Through(t testing.TB, broker *memory.Broker, publisher, consumer messaging.Connector, queue string, dispatch messaging.Dispatch) messaging.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := broker.DeclareQueue(queue, memory.QueueOptions{Durable: true}); err != nil {
		t.Fatal(err)
	}
	dispatch.Topic, dispatch.RoutingKey, dispatch.Mandatory = "", queue, true
	write(ctx, t, publisher, dispatch)
	return read(ctx, t, consumer, queue)
}

func write(ctx context.Context, t testing.TB, connector messaging.Connector, dispatch messaging.Dispatch) {
	t.Helper()
	connection, err := connector.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = connection.Close() }()
	writer, err := connection.Writer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = writer.Close() }()
	if _, err := writer.Write(ctx, dispatch); err != nil {
		t.Fatal(err)
	}
}

func read(ctx context.Context, t testing.TB, connector messaging.Connector, queue string) messaging.Delivery {
	t.Helper()
	connection, err := connector.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = connection.Close() }()
	reader, err := connection.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reader.Close() }()
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: queue, BufferCapacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Close() }()
	var delivery messaging.Delivery
	if err := stream.Read(ctx, &delivery); err != nil {
		t.Fatal(err)
	}
	if err := stream.Acknowledge(ctx, delivery); err != nil {
		t.Fatal(err)
	}
	return delivery
}
