package otel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/flow"
)

func TestConsumeFixture(t *testing.T) {
	gunit.Run(new(ConsumeFixture), t)
}

// ConsumeFixture hands batches through Handler, their envelopes and a fake
// settler in the context as the streaming runtime and deadletter put them.
type ConsumeFixture struct {
	*gunit.Fixture
	recorder recorder
	tracing  *Tracing
	settler  *fakeSettler
	handled  int
	inside   trace.SpanContext // the span context the inner handler ran under
	during   func(ctx context.Context, deliveries []messaging.Delivery)
}

func (f *ConsumeFixture) Setup() {
	f.recorder = newRecorder()
	f.tracing = New(Options.TracerProvider(f.recorder.provider))
	f.settler = newFakeSettler()
}

func (f *ConsumeFixture) handle(ctx context.Context, deliveries ...messaging.Delivery) {
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		f.handled += len(messages)
		f.inside = trace.SpanContextFromContext(ctx)
		if f.during != nil {
			f.during(ctx, messaging.DeliveriesFrom(ctx))
		}
	})
	messages := make([]any, len(deliveries))
	for i := range deliveries {
		messages[i] = deliveries[i].MessageID
	}
	ctx = messaging.WithSettler(messaging.WithDeliveries(ctx, deliveries), f.settler)
	f.tracing.Handler(inner).Handle(ctx, messages...)
}

func remoteContext(trace0, span0 byte) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{trace0, 1}, SpanID: trace.SpanID{span0, 1}, TraceFlags: trace.FlagsSampled, Remote: true})
}

func delivery(id string, headers map[string]any) messaging.Delivery {
	return messaging.Delivery{MessageID: id, CorrelationID: "c-" + id, MessageType: "placed", Attempt: 1,
		SourceQueue: "orders.ship", RoutingKey: "eu", Headers: headers}
}

func (f *ConsumeFixture) TestOneMessageContinuesItsTrace() {
	sent := remoteContext(1, 1)
	f.handle(context.Background(), delivery("m1", map[string]any{"traceparent": traceparent(sent)}))

	f.So(f.handled, should.Equal, 1)
	spans := f.recorder.named("orders.ship process")
	f.So(spans, should.HaveLength, 1)
	span := spans[0]
	f.So(span.SpanKind, should.Equal, trace.SpanKindConsumer)
	f.So(span.Parent.SpanID(), should.Equal, sent.SpanID())
	f.So(span.SpanContext.TraceID(), should.Equal, sent.TraceID())
	f.So(f.inside, should.Resemble, span.SpanContext) // the handler's writes are the span's children
	values := attributes(span.Attributes)
	f.So(values["messaging.message.id"], should.Equal, "m1")
	f.So(values["messaging.message.conversation_id"], should.Equal, "c-m1")
	f.So(values["messaging.acemq.attempt"], should.Equal, int64(1))
	f.So(values["messaging.operation.type"], should.Equal, "process")
}

func (f *ConsumeFixture) TestTheMessageNotTheConsumersOwnSpanIsTheParent() {
	ambient, consumer := f.recorder.provider.Tracer("test").Start(context.Background(), "consumer loop")
	sent := remoteContext(1, 1)
	f.handle(ambient, delivery("m1", map[string]any{"traceparent": traceparent(sent)}))
	consumer.End()
	f.So(f.recorder.named("orders.ship process")[0].Parent.SpanID(), should.Equal, sent.SpanID())
}

func (f *ConsumeFixture) TestAMalformedTraceparentIsHandledUnderAFreshTrace() {
	ambient, consumer := f.recorder.provider.Tracer("test").Start(context.Background(), "consumer loop")
	f.handle(ambient, delivery("m1", map[string]any{"traceparent": "00-not-a-trace-01", "tracestate": "=,=,="}))
	consumer.End()

	f.So(f.handled, should.Equal, 1)
	span := f.recorder.named("orders.ship process")[0]
	f.So(span.Parent.IsValid(), should.BeFalse)
	f.So(span.SpanContext.IsValid(), should.BeTrue)
	f.So(span.SpanContext.TraceID(), should.NotEqual, consumer.SpanContext().TraceID())
	f.So(span.Status.Code, should.Equal, codes.Unset)
}

func (f *ConsumeFixture) TestANonTextTraceparentIsIgnored() {
	f.handle(context.Background(), delivery("m1", map[string]any{"traceparent": int64(7)}))
	f.So(f.handled, should.Equal, 1)
	f.So(f.recorder.named("orders.ship process")[0].Parent.IsValid(), should.BeFalse)
}

func (f *ConsumeFixture) TestABatchFromOneTraceHasItsFirstMessageAsParentAndLinksTheOthers() {
	first, second := remoteContext(1, 1), remoteContext(1, 2)
	f.handle(context.Background(),
		delivery("m1", map[string]any{"traceparent": traceparent(first)}),
		delivery("m2", map[string]any{"traceparent": traceparent(second)}),
		delivery("m3", map[string]any{"traceparent": traceparent(first)}),
		delivery("m4", nil))

	span := f.recorder.named("orders.ship process")[0]
	f.So(span.Parent.SpanID(), should.Equal, first.SpanID())
	f.So(span.Links, should.HaveLength, 1)
	f.So(span.Links[0].SpanContext.SpanID(), should.Equal, second.SpanID())
	f.So(attributes(span.Attributes)["messaging.batch.message_count"], should.Equal, int64(4))
}

func (f *ConsumeFixture) TestABatchFromSeveralTracesStartsOneAndLinksEachMessage() {
	one, two := remoteContext(1, 1), remoteContext(2, 2)
	ambient, consumer := f.recorder.provider.Tracer("test").Start(context.Background(), "consumer loop")
	f.handle(ambient,
		delivery("m1", map[string]any{"traceparent": traceparent(one)}),
		delivery("m2", map[string]any{"traceparent": "garbage"}),
		delivery("m3", map[string]any{"traceparent": traceparent(two)}))
	consumer.End()

	span := f.recorder.named("orders.ship process")[0]
	f.So(span.Parent.IsValid(), should.BeFalse)
	f.So(span.Links, should.HaveLength, 2)
	f.So(span.Links[0].SpanContext.TraceID(), should.Equal, one.TraceID())
	f.So(attributes(span.Links[0].Attributes)["messaging.message.id"], should.Equal, "m1")
	f.So(span.Links[1].SpanContext.TraceID(), should.Equal, two.TraceID())
	f.So(attributes(span.Links[1].Attributes)["messaging.message.id"], should.Equal, "m3")
}

func (f *ConsumeFixture) TestSettlementsAreSpanEvents() {
	f.during = func(ctx context.Context, deliveries []messaging.Delivery) {
		f.So(messaging.Retry(ctx, deliveries[0], errors.New("busy")), should.BeNil)
		f.So(messaging.Reject(ctx, deliveries[1], errors.New("bad")), should.BeNil)
		f.So(messaging.Park(ctx, deliveries[2], errors.New("odd")), should.BeNil)
		f.So(messaging.InProgress(ctx, deliveries[3], 3*time.Second), should.BeNil)
		f.So(messaging.Accept(ctx, deliveries[4]), should.BeNil)
	}
	f.handle(context.Background(), delivery("m1", nil), delivery("m2", nil), delivery("m3", nil), delivery("m4", nil), delivery("m5", nil))

	span := f.recorder.named("orders.ship process")[0]
	f.So(span.Events, should.HaveLength, 4)
	names := []string{}
	for _, event := range span.Events {
		names = append(names, event.Name)
	}
	f.So(names, should.Resemble, []string{"message.retried", "message.dead_lettered", "message.parked", "message.in_progress"})
	f.So(attributes(span.Events[0].Attributes)["messaging.acemq.reason"], should.Equal, "busy")
	f.So(attributes(span.Events[1].Attributes)["messaging.message.id"], should.Equal, "m2")
	f.So(attributes(span.Events[3].Attributes)["messaging.acemq.delay_ms"], should.Equal, int64(3000))
	f.So(span.Status.Code, should.Equal, codes.Error) // a message was dead-lettered
}

func (f *ConsumeFixture) TestAParkedMessageIsNotAnError() {
	f.during = func(ctx context.Context, deliveries []messaging.Delivery) {
		_ = messaging.Park(ctx, deliveries[0], errors.New("odd"))
	}
	f.handle(context.Background(), delivery("m1", nil))
	span := f.recorder.named("orders.ship process")[0]
	f.So(span.Status.Code, should.Equal, codes.Unset)
	f.So(attributes(span.Attributes)["messaging.acemq.outcome"], should.Equal, "parked")
}

func (f *ConsumeFixture) TestAPanicEndsTheSpanAsAnErrorAndGoesOn() {
	f.during = func(context.Context, []messaging.Delivery) { panic("boom") }
	recovered := func() (value any) {
		defer func() { value = recover() }()
		f.handle(context.Background(), delivery("m1", nil))
		return nil
	}()
	f.So(recovered, should.Equal, "boom")
	span := f.recorder.named("orders.ship process")[0]
	f.So(span.Status.Code, should.Equal, codes.Error)
	f.So(attributes(span.Attributes)["messaging.acemq.outcome"], should.Equal, "failed")
}

func (f *ConsumeFixture) TestAFinishedPipelineRunIsAnEventAndEarlierObserversStillHear() {
	var heard []flow.RunFinished
	ctx := flow.WithRunObserver(context.Background(), flow.RunObserverFunc(func(_ context.Context, run flow.RunFinished) {
		heard = append(heard, run)
	}))
	f.during = func(ctx context.Context, _ []messaging.Delivery) {
		flow.RunObserverFrom(ctx).RunFinished(ctx, flow.RunFinished{Pipeline: "fulfilment", Step: "pick", Outcome: flow.OutcomeEndedEarly, MessageID: "m1"})
	}
	f.handle(ctx, delivery("m1", nil))

	span := f.recorder.named("orders.ship process")[0]
	f.So(span.Events, should.HaveLength, 1)
	f.So(span.Events[0].Name, should.Equal, "pipeline.run_finished")
	values := attributes(span.Events[0].Attributes)
	f.So(values["messaging.acemq.pipeline"], should.Equal, "fulfilment")
	f.So(values["messaging.acemq.step"], should.Equal, "pick")
	f.So(values["messaging.acemq.outcome"], should.Equal, "ended_early")
	f.So(heard, should.HaveLength, 1)
}

func (f *ConsumeFixture) TestWithoutASettlerNothingIsDecidedAndNothingFails() {
	inner := messaging.HandlerFunc(func(context.Context, ...any) { f.handled++ })
	ctx := messaging.WithDeliveries(context.Background(), []messaging.Delivery{delivery("m1", nil)})
	f.tracing.Handler(inner).Handle(ctx, "m1")
	f.So(f.handled, should.Equal, 1)
	f.So(f.recorder.named("orders.ship process")[0].Events, should.BeEmpty)
}

func (f *ConsumeFixture) TestWithoutEnvelopesTheSpanIsNamedProcess() {
	inner := messaging.HandlerFunc(func(context.Context, ...any) { f.handled++ })
	f.tracing.Handler(inner).Handle(context.Background(), "a", "b")
	f.So(f.handled, should.Equal, 1)
	f.So(f.recorder.named("process"), should.HaveLength, 1)
}
