package streams

import (
	"context"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestUnwrapFixture(t *testing.T) {
	gunit.Run(new(UnwrapFixture), t)
}

type UnwrapFixture struct {
	*gunit.Fixture
	reader    *requeuingReader
	connector *resumingConnector
}

func (f *UnwrapFixture) Setup() {
	f.reader = &requeuingReader{}
	conn := &fakeConnection{supports: true}
	f.connector = &resumingConnector{Connector: &answeringConnector{fakeConnector{conn: conn}},
		stream: "orders.log", position: newPosition(FromFirst()), monitor: &countingMonitor{}}
}

func (f *UnwrapFixture) TestTheTransportsConnectorIsFoundBeneath() {
	s, ok := messaging.As[supporter](f.connector)
	f.So(ok, should.BeTrue)
	f.So(s, should.Equal, f.connector.Connector)
}

func (f *UnwrapFixture) TestTheTransportsReaderIsFoundBeneath() {
	reader := &resumingReader{Reader: f.reader, connector: f.connector}
	found, ok := messaging.As[*requeuingReader](reader)
	f.So(ok, should.BeTrue)
	f.So(found, should.Equal, f.reader)
}

func (f *UnwrapFixture) TestTheResumingStreamKeepsTheTransportsRequeuerToItself() {
	reader := &resumingReader{Reader: f.reader, connector: f.connector}
	stream, err := reader.Stream(context.Background(), messaging.StreamConfig{StreamName: "orders.log"})
	f.So(err, should.BeNil)
	_, isResuming := stream.(*resumingStream)
	f.So(isResuming, should.BeTrue)
	_, ok := messaging.As[messaging.Requeuer](stream)
	f.So(ok, should.BeFalse) // a nack on a stream queue would close the connection
}

// answeringConnector is a transport's connector that answers SupportsStreams.
type answeringConnector struct{ fakeConnector }

func (c *answeringConnector) SupportsStreams() bool { return true }

// requeuingReader opens streams that could return a delivery to their queue.
type requeuingReader struct{ messaging.Reader }

func (r *requeuingReader) Stream(context.Context, messaging.StreamConfig) (messaging.Stream, error) {
	return &requeuingFakeStream{}, nil
}

type requeuingFakeStream struct{ fakeStream }

func (s *requeuingFakeStream) Requeue(context.Context, messaging.Delivery) error { return nil }
