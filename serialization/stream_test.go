package serialization

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestStreamFixture(t *testing.T) {
	gunit.Run(new(StreamFixture), t)
}

type StreamFixture struct {
	*gunit.Fixture

	inner   *fakeConnector
	monitor *fakeMonitor
	logs    *bytes.Buffer
	options []Option
}

func (f *StreamFixture) Setup() {
	f.inner = newFakeConnector()
	f.monitor = &fakeMonitor{}
	f.logs = &bytes.Buffer{}
	f.options = []Option{
		Options.ReadTypes(map[string]reflect.Type{
			"order-placed":  reflect.TypeOf(orderPlaced{}),
			"order-shipped": reflect.TypeOf(&orderShipped{}),
		}),
		Options.Monitor(f.monitor),
		Options.Logger(slog.New(slog.NewTextHandler(f.logs, nil))),
	}
}

func (f *StreamFixture) stream(extra ...Option) messaging.Stream {
	ctx := context.Background()
	connection, err := New(f.inner, append(f.options, extra...)...).Connect(ctx)
	f.So(err, should.BeNil)
	reader, err := connection.Reader(ctx)
	f.So(err, should.BeNil)
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: "orders"})
	f.So(err, should.BeNil)
	return stream
}

func (f *StreamFixture) read(delivery messaging.Delivery, extra ...Option) messaging.Delivery {
	f.inner.connection.reader.stream.deliveries = []messaging.Delivery{delivery}
	var got messaging.Delivery
	f.So(f.stream(extra...).Read(context.Background(), &got), should.BeNil)
	return got
}

func (f *StreamFixture) TestAStructTypeDecodesToAValue() {
	got := f.read(messaging.Delivery{MessageType: "order-placed", ContentType: "application/json", Payload: []byte(`{"OrderID":7}`)})

	f.So(got.Message, should.Resemble, orderPlaced{OrderID: 7})
	f.So(got.Undecodable, should.BeNil)
	f.So(f.monitor.decoded, should.Equal, []error{nil})
}

func (f *StreamFixture) TestAPointerTypeDecodesToAPointer() {
	got := f.read(messaging.Delivery{MessageType: "order-shipped", ContentType: "application/json", Payload: []byte(`{"OrderID":8}`)})

	f.So(got.Message, should.Resemble, &orderShipped{OrderID: 8})
}

func (f *StreamFixture) TestContentTypeParametersCaseAndEmptinessAreTolerated() {
	got := f.read(messaging.Delivery{MessageType: "order-placed", ContentType: " Application/JSON; charset=utf-8", Payload: []byte(`{"OrderID":1}`)})
	f.So(got.Message, should.Resemble, orderPlaced{OrderID: 1})

	got = f.read(messaging.Delivery{MessageType: "order-placed", Payload: []byte(`{"OrderID":2}`)})
	f.So(got.Message, should.Resemble, orderPlaced{OrderID: 2})
}

func (f *StreamFixture) TestAnUnknownTypeIsMarkedUndecodable() {
	got := f.read(messaging.Delivery{MessageType: "order-lost", Payload: []byte(`{}`)})

	f.So(got.Message, should.BeNil)
	f.So(errors.Is(got.Undecodable, ErrUnknownMessageType), should.BeTrue)
	f.So(got.Undecodable.Error(), should.StartWith, "could not be decoded: ")
	f.So(got.Undecodable.Error(), should.ContainSubstring, `"order-lost"`)
	f.So(got.Undecodable.Error(), should.ContainSubstring, "ReadTypes")
	f.So(f.monitor.decoded, should.Equal, []error{got.Undecodable})
	f.So(f.logs.String(), should.BeEmpty)
}

func (f *StreamFixture) TestAnUnknownTypeIsIgnoredWhenAsked() {
	got := f.read(messaging.Delivery{MessageID: "m-1", MessageType: "order-lost", Payload: []byte(`{}`)},
		Options.IgnoreUnknownMessageTypes(true))

	f.So(got.Message, should.BeNil)
	f.So(got.Undecodable, should.BeNil)
	f.So(errors.Is(f.monitor.decoded[0], ErrUnknownMessageType), should.BeTrue)
	f.So(f.logs.String(), should.ContainSubstring, "level=WARN")
	f.So(f.logs.String(), should.ContainSubstring, "message_id=m-1")
}

func (f *StreamFixture) TestAnUnknownContentTypeIsMarkedUndecodable() {
	got := f.read(messaging.Delivery{MessageType: "order-placed", ContentType: "application/xml", Payload: []byte(`<x/>`)})

	f.So(got.Message, should.BeNil)
	f.So(errors.Is(got.Undecodable, ErrUnknownContentType), should.BeTrue)
	f.So(got.Undecodable.Error(), should.ContainSubstring, `"application/xml"`)
	f.So(got.Undecodable.Error(), should.ContainSubstring, "AddDeserializer")
}

func (f *StreamFixture) TestAnUnknownContentTypeIsIgnoredWhenAsked() {
	got := f.read(messaging.Delivery{MessageType: "order-placed", ContentType: "application/xml"},
		Options.IgnoreUnknownContentTypes(true))

	f.So(got.Message, should.BeNil)
	f.So(got.Undecodable, should.BeNil)
	f.So(f.logs.String(), should.ContainSubstring, "level=WARN")
}

func (f *StreamFixture) TestAnUnparsablePayloadIsMarkedUndecodableWithTheReason() {
	got := f.read(messaging.Delivery{MessageType: "order-placed", ContentType: "application/json", Payload: []byte(`{"OrderID":"seven"`)})

	f.So(got.Message, should.BeNil)
	f.So(errors.Is(got.Undecodable, ErrDeserialization), should.BeTrue)
	f.So(got.Undecodable.Error(), should.StartWith,
		"could not be decoded: this message is not JSON that reads as serialization.orderPlaced: ")
}

func (f *StreamFixture) TestAnUnparsablePayloadIsIgnoredWhenAsked() {
	got := f.read(messaging.Delivery{MessageType: "order-placed", Payload: []byte(`nope`)},
		Options.IgnoreDeserializationErrors(true))

	f.So(got.Message, should.BeNil)
	f.So(got.Undecodable, should.BeNil)
	f.So(errors.Is(f.monitor.decoded[0], ErrDeserialization), should.BeTrue)
}

func (f *StreamFixture) TestATypeOutsideAllowedTypesIsFiltered() {
	allowed := Options.AllowedTypes(map[string]struct{}{"order-shipped": {}})

	got := f.read(messaging.Delivery{MessageType: "order-placed", Payload: []byte(`{"OrderID":1}`)}, allowed)
	f.So(got.Message, should.BeNil)
	f.So(got.Undecodable, should.Equal, messaging.ErrFiltered)
	f.So(f.monitor.decoded, should.BeEmpty)

	got = f.read(messaging.Delivery{MessageType: "order-shipped", Payload: []byte(`{"OrderID":1}`)}, allowed)
	f.So(got.Message, should.Resemble, &orderShipped{OrderID: 1})
}

func (f *StreamFixture) TestAnEmptyAllowedTypesAllowsEverything() {
	got := f.read(messaging.Delivery{MessageType: "order-placed", Payload: []byte(`{"OrderID":1}`)},
		Options.AllowedTypes(map[string]struct{}{}))

	f.So(got.Message, should.Resemble, orderPlaced{OrderID: 1})
}

func (f *StreamFixture) TestACustomDeserializerIsPickedByContentType() {
	extra := []Option{
		Options.ReadTypes(map[string]reflect.Type{"upper": reflect.TypeOf(orderShipped{})}),
		Options.AddDeserializer(upperSerializer{}),
	}

	got := f.read(messaging.Delivery{MessageType: "upper", ContentType: "text/x-upper", Payload: []byte("UPPER")}, extra...)
	f.So(got.Message, should.Resemble, orderShipped{OrderID: 99})

	got = f.read(messaging.Delivery{MessageType: "upper", ContentType: "TEXT/X-UPPER", Payload: []byte("lower")}, extra...)
	f.So(errors.Is(got.Undecodable, errUpper), should.BeTrue)
	f.So(errors.Is(got.Undecodable, ErrDeserialization), should.BeTrue)
}

func (f *StreamFixture) TestAPanickingDeserializerIsADeserializationError() {
	got := f.read(messaging.Delivery{MessageType: "order-placed", ContentType: "application/x-panic"},
		Options.AddDeserializer(panickingCodec{}, "application/x-panic"))

	f.So(errors.Is(got.Undecodable, ErrDeserialization), should.BeTrue)
	f.So(got.Undecodable.Error(), should.ContainSubstring, "deserializer bug")
}

func (f *StreamFixture) TestAnUpstreamUndecodableIsKept() {
	upstream := errors.New("could not be decoded: bad envelope")

	got := f.read(messaging.Delivery{MessageType: "order-placed", Payload: []byte(`{}`), Undecodable: upstream})

	f.So(got.Undecodable, should.Equal, upstream)
	f.So(got.Message, should.BeNil)
}

func (f *StreamFixture) TestAReusedDeliveryLosesItsOldMessage() {
	f.inner.connection.reader.stream.deliveries = []messaging.Delivery{
		{MessageType: "order-placed", Payload: []byte(`{"OrderID":1}`)},
		{MessageType: "order-lost", Payload: []byte(`{}`)},
	}
	stream := f.stream()
	var delivery messaging.Delivery

	f.So(stream.Read(context.Background(), &delivery), should.BeNil)
	f.So(delivery.Message, should.NotBeNil)
	f.So(stream.Read(context.Background(), &delivery), should.BeNil)
	f.So(delivery.Message, should.BeNil)
	f.So(delivery.Undecodable, should.NotBeNil)
}

func (f *StreamFixture) TestAReadErrorPassesThroughUntouched() {
	f.inner.connection.reader.stream.err = messaging.ErrClosed
	var delivery messaging.Delivery

	err := f.stream().Read(context.Background(), &delivery)

	f.So(err, should.Equal, messaging.ErrClosed)
	f.So(f.monitor.decoded, should.BeEmpty)
}

func (f *StreamFixture) TestOtherCallsReachTheInnerLevels() {
	stream := f.stream()
	f.So(f.inner.connection.reader.config.StreamName, should.Equal, "orders")

	f.So(stream.Acknowledge(context.Background(), messaging.Delivery{DeliveryID: 3}), should.BeNil)
	f.So(stream.Close(), should.BeNil)
	f.So(f.inner.connection.reader.stream.acknowledged[0].DeliveryID, should.Equal, uint64(3))
	f.So(f.inner.connection.reader.stream.closed, should.Equal, 1)
}

func (f *StreamFixture) TestInnerErrorsPassThroughAtEveryLevel() {
	failure := errors.New("refused")
	ctx := context.Background()

	f.inner.connectErr = failure
	_, err := New(f.inner).Connect(ctx)
	f.So(err, should.Equal, failure)

	f.inner.connectErr = nil
	f.inner.connection.err = failure
	connection, _ := New(f.inner).Connect(ctx)
	reader, err := connection.Reader(ctx)
	f.So(reader, should.BeNil)
	f.So(err, should.Equal, failure)
	writer, err := connection.Writer(ctx)
	f.So(writer, should.BeNil)
	f.So(err, should.Equal, failure)
	commitWriter, err := connection.CommitWriter(ctx)
	f.So(commitWriter, should.BeNil)
	f.So(err, should.Equal, failure)

	f.inner.connection.err = nil
	f.inner.connection.reader.err = failure
	reader, _ = connection.Reader(ctx)
	stream, err := reader.Stream(ctx, messaging.StreamConfig{})
	f.So(stream, should.BeNil)
	f.So(err, should.Equal, failure)

	f.So(connection.Close(), should.BeNil)
	f.So(f.inner.connection.closed, should.Equal, 1)
	f.So(New(f.inner).Close(), should.BeNil)
	f.So(f.inner.closed, should.Equal, 1)
}

func (f *StreamFixture) TestARoundTripThroughWriterAndStream() {
	connector := New(f.inner,
		Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(orderPlaced{}): "order-placed"}),
		Options.ReadTypes(map[string]reflect.Type{"order-placed": reflect.TypeOf(orderPlaced{})}))
	connection, _ := connector.Connect(context.Background())
	writer, _ := connection.Writer(context.Background())
	_, err := writer.Write(context.Background(), messaging.Dispatch{Message: orderPlaced{OrderID: 12, Note: "n"}})
	f.So(err, should.BeNil)

	sent := f.inner.connection.writer.written[0]
	f.inner.connection.reader.stream.deliveries = []messaging.Delivery{{
		MessageType: sent.MessageType, ContentType: sent.ContentType, Payload: sent.Payload,
	}}
	reader, _ := connection.Reader(context.Background())
	stream, _ := reader.Stream(context.Background(), messaging.StreamConfig{})
	var got messaging.Delivery
	f.So(stream.Read(context.Background(), &got), should.BeNil)

	f.So(got.Message, should.Resemble, orderPlaced{OrderID: 12, Note: "n"})
}
