package otel

import (
	"context"
	"errors"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/warrenmq/messaging"
)

func TestPublishFixture(t *testing.T) {
	gunit.Run(new(PublishFixture), t)
}

// PublishFixture writes dispatches through Transport and Outbox over a fake
// connector and reads the spans and the headers the fake was given.
type PublishFixture struct {
	*gunit.Fixture
	recorder recorder
	inner    *fakeConnector
	tracing  *Tracing
}

func (f *PublishFixture) Setup() {
	f.recorder = newRecorder()
	f.inner = &fakeConnector{}
	f.tracing = New(Options.TracerProvider(f.recorder.provider))
}

func (f *PublishFixture) write(connector messaging.Connector, ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	connection, err := connector.Connect(ctx)
	f.So(err, should.BeNil)
	writer, err := connection.Writer(ctx)
	f.So(err, should.BeNil)
	return writer.Write(ctx, dispatches...)
}

// request returns a context under a span of the caller's, as an HTTP handler's would be.
func (f *PublishFixture) request() (context.Context, trace.Span) {
	return f.recorder.provider.Tracer("test").Start(context.Background(), "POST /orders", trace.WithSpanKind(trace.SpanKindServer))
}

func (f *PublishFixture) TestPublishSpanIsAChildOfTheCallerAndTravelsInTheHeaders() {
	ctx, request := f.request()
	shared := map[string]any{"x-app": "kept"}
	n, err := f.write(f.tracing.Transport(f.inner), ctx,
		messaging.Dispatch{Topic: "order-placed", RoutingKey: "eu", MessageID: "m1", MessageType: "placed", Headers: shared})
	request.End()

	f.So(n, should.Equal, 1)
	f.So(err, should.BeNil)
	spans := f.recorder.named("order-placed publish")
	f.So(spans, should.HaveLength, 1)
	span := spans[0]
	f.So(span.SpanKind, should.Equal, trace.SpanKindProducer)
	f.So(span.Parent.SpanID(), should.Equal, request.SpanContext().SpanID())
	f.So(span.SpanContext.TraceID(), should.Equal, request.SpanContext().TraceID())
	f.So(attributes(span.Attributes), should.ContainKey, "messaging.system")
	f.So(attributes(span.Attributes)["messaging.destination.name"], should.Equal, "order-placed")
	f.So(attributes(span.Attributes)["messaging.rabbitmq.destination.routing_key"], should.Equal, "eu")
	f.So(attributes(span.Attributes)["messaging.message.id"], should.Equal, "m1")
	f.So(attributes(span.Attributes)["messaging.operation.type"], should.Equal, "send")

	written := f.inner.written[0]
	f.So(written.Headers["x-app"], should.Equal, "kept")
	f.So(written.Headers["traceparent"], should.Equal, traceparent(span.SpanContext))
	f.So(shared, should.Resemble, map[string]any{"x-app": "kept"}) // the caller's map is not changed
}

func (f *PublishFixture) TestOutboxWritesACreateSpanAndTheRelayContinuesIt() {
	ctx, request := f.request()
	_, err := f.write(f.tracing.Outbox(f.inner), ctx, messaging.Dispatch{Topic: "order-placed"})
	request.End()
	f.So(err, should.BeNil)
	stored := f.inner.written[0]

	// The relay publishes the stored row later, on a context with no span.
	relayed := &fakeConnector{}
	_, err = f.write(f.tracing.Transport(relayed), context.Background(), stored)
	f.So(err, should.BeNil)

	create := f.recorder.named("order-placed create")
	publish := f.recorder.named("order-placed publish")
	f.So(create, should.HaveLength, 1)
	f.So(publish, should.HaveLength, 1)
	f.So(create[0].Parent.SpanID(), should.Equal, request.SpanContext().SpanID())
	f.So(attributes(create[0].Attributes)["messaging.operation.type"], should.Equal, "create")
	f.So(publish[0].Parent.SpanID(), should.Equal, create[0].SpanContext.SpanID())
	f.So(publish[0].Parent.IsRemote(), should.BeTrue)
	f.So(publish[0].SpanContext.TraceID(), should.Equal, request.SpanContext().TraceID())
	f.So(relayed.written[0].Headers["traceparent"], should.Equal, traceparent(publish[0].SpanContext))
}

func (f *PublishFixture) TestACopyWrittenUnderASpanIsItsChildAndLinksTheOriginal() {
	original := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx, handling := f.request()
	_, err := f.write(f.tracing.Transport(f.inner), ctx,
		messaging.Dispatch{RoutingKey: "orders.dlq", Headers: map[string]any{"traceparent": traceparent(original)}})
	handling.End()
	f.So(err, should.BeNil)

	span := f.recorder.named("orders.dlq publish")[0]
	f.So(span.Parent.SpanID(), should.Equal, handling.SpanContext().SpanID())
	f.So(span.Links, should.HaveLength, 1)
	f.So(span.Links[0].SpanContext.SpanID(), should.Equal, original.SpanID())
}

func (f *PublishFixture) TestWithoutAnySpanEachDispatchStartsATrace() {
	_, err := f.write(f.tracing.Transport(f.inner), context.Background(),
		messaging.Dispatch{RoutingKey: "a"}, messaging.Dispatch{RoutingKey: "b"})
	f.So(err, should.BeNil)
	spans := f.recorder.spans()
	f.So(spans, should.HaveLength, 2)
	f.So(spans[0].Parent.IsValid(), should.BeFalse)
	f.So(spans[0].SpanContext.TraceID(), should.NotEqual, spans[1].SpanContext.TraceID())
	f.So(f.inner.written[1].Headers["traceparent"], should.Equal, traceparent(spans[1].SpanContext))
}

func (f *PublishFixture) TestAFailedWriteMarksTheSpansThatDidNotLand() {
	f.inner.n = func(int) int { return 1 }
	f.inner.err = &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "m1", Confirmed: true, Routed: true},
		{MessageID: "m2", Confirmed: true, Err: messaging.ErrUnroutable},
	}}
	n, err := f.write(f.tracing.Transport(f.inner), context.Background(),
		messaging.Dispatch{RoutingKey: "q", MessageID: "m1"}, messaging.Dispatch{RoutingKey: "q", MessageID: "m2"})

	f.So(n, should.Equal, 1)
	f.So(errors.Is(err, messaging.ErrUnroutable), should.BeTrue)
	spans := f.recorder.spans()
	f.So(spans, should.HaveLength, 2)
	f.So(spans[0].Status.Code, should.Equal, codes.Unset)
	f.So(spans[1].Status.Code, should.Equal, codes.Error)
	f.So(attributes(spans[1].Attributes)["messaging.acemq.outcome"], should.Equal, "unroutable")
}

func (f *PublishFixture) TestCommitWritersAreTracedToo() {
	ctx, request := f.request()
	connection, _ := f.tracing.Outbox(f.inner).Connect(ctx)
	writer, err := connection.CommitWriter(ctx)
	f.So(err, should.BeNil)
	_, err = writer.Write(ctx, messaging.Dispatch{Topic: "t"})
	f.So(err, should.BeNil)
	f.So(writer.Commit(), should.BeNil)
	request.End()
	f.So(f.recorder.named("t create"), should.HaveLength, 1)
	f.So(f.inner.written[0].Headers, should.ContainKey, "traceparent")
}

func (f *PublishFixture) TestAnEmptyWriteStartsNothing() {
	n, err := f.write(f.tracing.Transport(f.inner), context.Background())
	f.So(n, should.Equal, 0)
	f.So(err, should.BeNil)
	f.So(f.recorder.spans(), should.BeEmpty)
}
