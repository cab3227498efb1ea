package serialization

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestContentTypeFixture(t *testing.T) {
	gunit.Run(new(ContentTypeFixture), t)
}

// ContentTypeFixture is how a delivery's content type picks its deserializer
// and reaches the monitor.
type ContentTypeFixture struct {
	*gunit.Fixture
	inner *fakeConnector
}

func (f *ContentTypeFixture) Setup() { f.inner = newFakeConnector() }

// read decodes one order-shipped delivery of contentType (an upper-case
// payload) through a decorator with options.
func (f *ContentTypeFixture) read(contentType string, options ...Option) messaging.Delivery {
	options = append([]Option{Options.Logger(discardLogger), Options.ReadTypes(map[string]reflect.Type{"order-shipped": reflect.TypeOf(orderShipped{})})}, options...)
	ctx := context.Background()
	connection, err := New(f.inner, options...).Connect(ctx)
	f.So(err, should.BeNil)
	reader, err := connection.Reader(ctx)
	f.So(err, should.BeNil)
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: "orders"})
	f.So(err, should.BeNil)
	f.inner.connection.reader.stream.deliveries = []messaging.Delivery{{MessageType: "order-shipped", ContentType: contentType, Payload: []byte("UPPER")}}
	var got messaging.Delivery
	f.So(stream.Read(ctx, &got), should.BeNil)
	return got
}

func (f *ContentTypeFixture) TestASuffixRegistrationServesEveryTypeEndingInIt() {
	for _, contentType := range []string{"application/vnd.orders+avro", " Application/Vnd.Shop+AVRO; version=2"} {
		got := f.read(contentType, Options.AddDeserializer(upperSerializer{}, "+avro"))
		f.So(got.Undecodable, should.BeNil)
		f.So(got.Message, should.Resemble, orderShipped{OrderID: 99})
	}
}

func (f *ContentTypeFixture) TestAnExactRegistrationWinsOverTheSuffix() {
	got := f.read("application/vnd.orders+avro",
		Options.AddDeserializer(JSON{}, "+avro"),
		Options.AddDeserializer(upperSerializer{}, "application/vnd.orders+avro"))
	f.So(got.Message, should.Resemble, orderShipped{OrderID: 99})
}

func (f *ContentTypeFixture) TestATypeWhoseSuffixHasNoRegistrationIsUnknown() {
	for _, contentType := range []string{"application/vnd.orders+avro", "application/avro", "text/x-upper+"} {
		got := f.read(contentType, Options.AddDeserializer(upperSerializer{}, "+json"))
		f.So(errors.Is(got.Undecodable, ErrUnknownContentType), should.BeTrue)
	}
}

// contentTypeMonitor hears content types as well.
type contentTypeMonitor struct {
	fakeMonitor
	decodedAs []string
}

func (m *contentTypeMonitor) MessageDecodedAs(contentType string, err error) {
	m.decodedAs = append(m.decodedAs, contentType)
	m.decoded = append(m.decoded, err)
}

func (f *ContentTypeFixture) TestAContentTypeMonitorHearsEachDecodeWithItsContentTypeOnce() {
	monitor := &contentTypeMonitor{}
	f.read("text/x-upper; charset=ascii", Options.AddDeserializer(upperSerializer{}), Options.Monitor(monitor))
	f.read("application/xml", Options.Monitor(monitor))

	f.So(monitor.decodedAs, should.Equal, []string{"text/x-upper; charset=ascii", "application/xml"})
	f.So(monitor.decoded, should.HaveLength, 2) // not heard through MessageDecoded as well
	f.So(monitor.decoded[0], should.BeNil)
	f.So(errors.Is(monitor.decoded[1], ErrUnknownContentType), should.BeTrue)
}

func (f *ContentTypeFixture) TestAMonitorWithoutContentTypesIsToldAsBefore() {
	monitor := &fakeMonitor{}
	f.read("text/x-upper", Options.AddDeserializer(upperSerializer{}), Options.Monitor(monitor))
	f.So(monitor.decoded, should.Equal, []error{nil})
}
