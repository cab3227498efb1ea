package prometheus

import (
	"context"
	"reflect"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/schema/avro"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/serialization/encryption"
	"github.com/warrenmq/messaging/serialization/protobuf"
)

func TestSerializationMetricsFixture(t *testing.T) {
	gunit.Run(new(SerializationMetricsFixture), t)
}

type SerializationMetricsFixture struct {
	*gunit.Fixture
	metrics *Metrics
}

func (f *SerializationMetricsFixture) Setup() {
	var err error
	f.metrics, err = New(prom.NewRegistry())
	f.So(err, should.BeNil)
}

func (f *SerializationMetricsFixture) TestEveryCodecsContentTypeHasItsName() {
	for contentType, codec := range map[string]string{
		"":                                "json",
		serialization.JSONContentType:     "json",
		"Application/JSON; charset=utf-8": "json",
		"application/problem+json":        "json",
		avro.RegisteredContentType:        "avro",
		avro.PlainContentType:             "avro",
		avro.GenericContentType:           "avro",
		"application/vnd.orders+avro":     "avro",
		encryption.ContentType:            "encrypted",
		protobuf.ContentType:              "protobuf",
		"application/xml":                 "other",
		"text/plain":                      "other",
	} {
		f.So(codecOf(contentType), should.Equal, codec)
	}
}

func (f *SerializationMetricsFixture) TestDecodesThroughTheDecoratorAreCountedByCodec() {
	broker := memory.New()
	defer func() { _ = broker.Close() }()
	f.So(broker.DeclareQueue("orders", memory.QueueOptions{Durable: true}), should.BeNil)
	connector := serialization.New(broker,
		serialization.Options.Monitor(f.metrics.Serialization()),
		serialization.Options.ReadTypes(map[string]reflect.Type{"order": reflect.TypeFor[map[string]any]()}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := connector.Connect(ctx)
	f.So(err, should.BeNil)
	writer, err := conn.Writer(ctx)
	f.So(err, should.BeNil)
	_, err = writer.Write(ctx,
		messaging.Dispatch{RoutingKey: "orders", MessageType: "order", ContentType: serialization.JSONContentType, Payload: []byte(`{"id":1}`)},
		messaging.Dispatch{RoutingKey: "orders", MessageType: "order", ContentType: "application/vnd.orders+avro", Payload: []byte{0}},
	)
	f.So(err, should.BeNil)
	reader, err := conn.Reader(ctx)
	f.So(err, should.BeNil)
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: "orders", BufferCapacity: 2})
	f.So(err, should.BeNil)
	for range 2 {
		var d messaging.Delivery
		f.So(stream.Read(ctx, &d), should.BeNil)
	}

	f.So(testutil.ToFloat64(f.metrics.decoded.WithLabelValues("json", "success")), should.Equal, 1)
	f.So(testutil.ToFloat64(f.metrics.decoded.WithLabelValues("avro", "failure")), should.Equal, 1) // no Avro deserializer here
	f.So(testutil.CollectAndCount(f.metrics.decoded), should.Equal, 2)
}
