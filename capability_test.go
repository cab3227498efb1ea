package messaging

import (
	"context"

	"github.com/smarty/assertions/should"
)

type plainStream struct{ Stream }

type requeuingStream struct {
	Stream
	requeued []Delivery
}

func (r *requeuingStream) Requeue(_ context.Context, delivery Delivery) error {
	r.requeued = append(r.requeued, delivery)
	return nil
}

type streamDecorator struct{ Stream }

func (d streamDecorator) Unwrap() Stream { return d.Stream }

type writerDecorator struct{ Writer }

func (d writerDecorator) Unwrap() Writer { return d.Writer }

type flushingWriter struct{ Writer }

func (flushingWriter) Flush() error { return nil }

func (f *TopologyFixture) TestAsFindsAStreamCapabilityThroughStreamDecorators() {
	inner := &requeuingStream{}
	requeuer, ok := As[Requeuer](streamDecorator{streamDecorator{inner}})
	f.So(ok, should.BeTrue)
	f.So(requeuer.Requeue(context.Background(), Delivery{DeliveryID: 3}), should.BeNil)
	f.So(inner.requeued, should.HaveLength, 1)
	_, ok = As[Requeuer](streamDecorator{plainStream{}})
	f.So(ok, should.BeFalse)
	_, ok = As[Requeuer](streamDecorator{nil})
	f.So(ok, should.BeFalse)
}

func (f *TopologyFixture) TestAsFindsAWriterCapabilityThroughWriterDecorators() {
	_, ok := As[interface{ Flush() error }](writerDecorator{flushingWriter{}})
	f.So(ok, should.BeTrue)
	_, ok = As[interface{ Flush() error }](writerDecorator{})
	f.So(ok, should.BeFalse)
}
