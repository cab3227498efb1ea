package serialization

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

var errUpper = errors.New("not upper")

func TestWriterFixture(t *testing.T) {
	gunit.Run(new(WriterFixture), t)
}

type WriterFixture struct {
	*gunit.Fixture

	inner   *fakeConnector
	monitor *fakeMonitor
	options []Option
}

func (f *WriterFixture) Setup() {
	f.inner = newFakeConnector()
	f.monitor = &fakeMonitor{}
	f.options = []Option{
		Options.WriteTypes(map[reflect.Type]string{
			reflect.TypeOf(orderPlaced{}):   "order-placed",
			reflect.TypeOf(&orderShipped{}): "order-shipped",
		}),
		Options.Monitor(f.monitor),
	}
}

func (f *WriterFixture) writer(extra ...Option) messaging.Writer {
	connection, err := New(f.inner, append(f.options, extra...)...).Connect(context.Background())
	f.So(err, should.BeNil)
	writer, err := connection.Writer(context.Background())
	f.So(err, should.BeNil)
	return writer
}

func (f *WriterFixture) TestAValueMessageIsEncoded() {
	n, err := f.writer().Write(context.Background(), messaging.Dispatch{Message: orderPlaced{OrderID: 7, Note: "hi"}})

	f.So(err, should.BeNil)
	f.So(n, should.Equal, 1)
	written := f.inner.connection.writer.written[0]
	f.So(string(written.Payload), should.Equal, `{"OrderID":7,"Note":"hi"}`)
	f.So(written.ContentType, should.Equal, "application/json")
	f.So(written.MessageType, should.Equal, "order-placed")
	f.So(written.Topic, should.Equal, "order-placed")
	f.So(written.Message, should.Resemble, orderPlaced{OrderID: 7, Note: "hi"})
	f.So(f.monitor.encoded, should.Equal, []error{nil})
}

func (f *WriterFixture) TestPointerAndValueBothMatchTheirRegisteredType() {
	_, err := f.writer().Write(context.Background(),
		messaging.Dispatch{Message: &orderPlaced{OrderID: 1}},
		messaging.Dispatch{Message: orderShipped{OrderID: 2}},
		messaging.Dispatch{Message: &orderShipped{OrderID: 3}},
	)

	f.So(err, should.BeNil)
	written := f.inner.connection.writer.written
	f.So(written[0].MessageType, should.Equal, "order-placed")
	f.So(written[1].MessageType, should.Equal, "order-shipped")
	f.So(string(written[1].Payload), should.Equal, `{"OrderID":2}`)
	f.So(written[2].MessageType, should.Equal, "order-shipped")
}

func (f *WriterFixture) TestAnExplicitTopicIsKept() {
	_, _ = f.writer().Write(context.Background(), messaging.Dispatch{Topic: "orders", RoutingKey: "eu", Message: orderPlaced{}})

	written := f.inner.connection.writer.written[0]
	f.So(written.Topic, should.Equal, "orders")
	f.So(written.RoutingKey, should.Equal, "eu")
}

func (f *WriterFixture) TestWithoutTopicFromTypeAnEmptyTopicStaysTheDefaultExchange() {
	_, err := f.writer(Options.TopicFromType(false)).Write(context.Background(), messaging.Dispatch{RoutingKey: "replies.42", Message: orderPlaced{}})

	f.So(err, should.BeNil)
	written := f.inner.connection.writer.written[0]
	f.So(written.Topic, should.Equal, "")
	f.So(written.RoutingKey, should.Equal, "replies.42")
	f.So(written.MessageType, should.Equal, "order-placed")
}

func (f *WriterFixture) TestAPayloadWithoutMessagePassesUnchanged() {
	dispatch := messaging.Dispatch{Topic: "raw", MessageType: "raw-type", ContentType: "text/plain", Payload: []byte("hello")}

	_, err := f.writer().Write(context.Background(), dispatch)

	f.So(err, should.BeNil)
	f.So(f.inner.connection.writer.written[0], should.Resemble, dispatch)
	f.So(f.monitor.encoded, should.BeEmpty)
}

func (f *WriterFixture) TestAnUnknownTypeWritesNothingAndSaysWhatToDo() {
	n, err := f.writer().Write(context.Background(),
		messaging.Dispatch{Message: orderPlaced{}},
		messaging.Dispatch{Message: 42},
	)

	f.So(n, should.Equal, 0)
	f.So(errors.Is(err, ErrUnknownWriteType), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "int")
	f.So(err.Error(), should.ContainSubstring, "WriteTypes")
	f.So(err.Error(), should.ContainSubstring, "dispatch 2 of 2")
	f.So(f.inner.connection.writer.calls, should.Equal, 0)
	f.So(f.monitor.encoded, should.HaveLength, 2)
	f.So(f.monitor.encoded[1], should.Equal, errors.Unwrap(err))
}

func (f *WriterFixture) TestTheCallersDispatchesAreNotModified() {
	dispatches := []messaging.Dispatch{{Message: orderPlaced{OrderID: 1}}}

	_, _ = f.writer().Write(context.Background(), dispatches...)

	f.So(dispatches[0].Payload, should.BeNil)
	f.So(dispatches[0].Topic, should.BeEmpty)
}

func (f *WriterFixture) TestACustomSerializerIsUsed() {
	_, err := f.writer(Options.Serializer(upperSerializer{})).Write(context.Background(), messaging.Dispatch{Message: orderPlaced{}})

	f.So(err, should.BeNil)
	written := f.inner.connection.writer.written[0]
	f.So(string(written.Payload), should.Equal, "UPPER")
	f.So(written.ContentType, should.Equal, "text/x-upper")
}

func (f *WriterFixture) TestSerializerFailuresAreErrorsNotPanics() {
	_, err := f.writer(Options.Serializer(panickingCodec{})).Write(context.Background(), messaging.Dispatch{Message: orderPlaced{}})
	f.So(errors.Is(err, ErrSerialization), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "serializer bug")

	f.Setup()
	f.options = append(f.options, Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(make(chan int)): "chan"}))
	_, err = f.writer().Write(context.Background(), messaging.Dispatch{Message: make(chan int)})
	f.So(errors.Is(err, ErrSerialization), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "cannot be written as JSON")
	f.So(f.inner.connection.writer.calls, should.Equal, 0)
}

func (f *WriterFixture) TestTheCommitWriterEncodesAndPassesCommitAndRollbackThrough() {
	ctx, slot := messaging.WithTransactionSlot(context.Background())
	connection, _ := New(f.inner, f.options...).Connect(ctx)

	writer, err := connection.CommitWriter(ctx)
	f.So(err, should.BeNil)
	_, err = writer.Write(ctx, messaging.Dispatch{Message: orderPlaced{OrderID: 5}})
	f.So(err, should.BeNil)
	f.So(writer.Commit(), should.BeNil)
	f.So(writer.Rollback(), should.BeNil)
	f.So(writer.Close(), should.BeNil)

	inner := f.inner.connection.commitWriter
	f.So(string(inner.written[0].Payload), should.Equal, `{"OrderID":5,"Note":""}`)
	f.So(inner.commits, should.Equal, 1)
	f.So(inner.rollbacks, should.Equal, 1)
	f.So(inner.closed, should.Equal, 1)
	f.So(messaging.TransactionSlotFrom(f.inner.connection.commitWriterCtx), should.Equal, slot)
}

func TestABrokenInnerConnectorIsAnErrorNotANilValue(t *testing.T) {
	connection, err := New(nilConnector{}).Connect(context.Background())
	if connection != nil || err == nil || !strings.Contains(err.Error(), "returned no connection and no error") {
		t.Fatalf("want an error naming the broken layer, got %v, %v", connection, err)
	}
}

type nilConnector struct{}

func (nilConnector) Connect(context.Context) (messaging.Connection, error) { return nil, nil }
func (nilConnector) Close() error                                          { return nil }
