package otel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/flow"
)

// Handler is a messaging.Middleware (pass tracing.Handler to messaging.Chain,
// or call it on a handler): each batch it hands on runs under a CONSUMER span
// "<queue> process". The span continues the trace the messages' headers
// carry (traceparent, read through the configured propagator), not the
// consumer's own context; a batch whose messages come from several traces
// starts a trace of its own with a link to each message's. A message with no
// trace context, or a malformed one, is handled as any other, under a fresh
// trace.
//
// What was decided for each message (retried, dead-lettered, parked, in
// progress) is written as a span event after the inner handler returns, read
// through messaging.DecisionOf, so put Handler inside the settlement
// decorator (deadletter, or the streaming runtime's own) and outside retry. A
// handler that panics leaves the span with status Error and the panic going
// on unchanged. Finished pipeline runs (patterns/flow) are written as
// pipeline.run_finished events.
func (t *Tracing) Handler(inner messaging.Handler) messaging.Handler {
	return &tracedHandler{inner: inner, tracing: t}
}

type tracedHandler struct {
	inner   messaging.Handler
	tracing *Tracing
}

func (h *tracedHandler) Handle(ctx context.Context, messages ...any) {
	deliveries := messaging.DeliveriesFrom(ctx)
	ctx, span := h.tracing.process(ctx, deliveries, len(messages))
	returned := false
	defer func() {
		if !returned {
			span.SetStatus(codes.Error, "the handler failed; retry or settlement decides what happens to the batch")
			span.SetAttributes(keyOutcome.String("failed"))
		}
		span.End()
	}()
	ctx = flow.WithRunObserver(ctx, runEvents{next: flow.RunObserverFrom(ctx)})
	h.inner.Handle(ctx, messages...)
	returned = true
	h.tracing.settled(ctx, span, deliveries)
}

// process starts the batch's span.
func (t *Tracing) process(ctx context.Context, deliveries []messaging.Delivery, count int) (context.Context, trace.Span) {
	queue := ""
	if len(deliveries) > 0 {
		queue = deliveries[0].SourceQueue
	}
	attributes := make([]attribute.KeyValue, 0, 9)
	attributes = append(attributes,
		systemRabbitMQ,
		keyOperationType.String("process"),
		keyOperationName.String("process"),
		keyDestination.String(queue),
	)
	if len(deliveries) == 1 {
		attributes = appendMessageAttributes(attributes, deliveries[0])
	} else {
		attributes = append(attributes, keyBatchCount.Int(count))
	}
	options := make([]trace.SpanStartOption, 0, 4)
	options = append(options, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attributes...))
	parent, links := t.parentOf(deliveries)
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	} else {
		options = append(options, trace.WithNewRoot())
	}
	if len(links) > 0 {
		options = append(options, trace.WithLinks(links...))
	}
	return t.tracer.Start(ctx, spanName(queue, "process"), options...)
}

// parentOf reads the batch's trace contexts: when every message that carries
// one carries the same trace, the first is the parent and the others (other
// spans of that trace) are links; when they come from several traces, there
// is no parent and each is a link.
func (t *Tracing) parentOf(deliveries []messaging.Delivery) (trace.SpanContext, []trace.Link) {
	var first trace.SpanContext
	var contexts []trace.SpanContext
	var ids []string
	single := true
	for _, delivery := range deliveries {
		remote := t.remote(delivery.Headers)
		if !remote.IsValid() {
			continue
		}
		if !first.IsValid() {
			first = remote
		} else if remote.TraceID() != first.TraceID() {
			single = false
		}
		contexts = append(contexts, remote)
		ids = append(ids, delivery.MessageID)
	}
	if len(contexts) == 0 {
		return trace.SpanContext{}, nil
	}
	var links []trace.Link
	for i, remote := range contexts {
		if single && (i == 0 || remote.Equal(first)) {
			continue
		}
		links = append(links, trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{keyMessageID.String(ids[i])}})
	}
	if single {
		return first, links
	}
	return trace.SpanContext{}, links
}

// settled writes an event for each message something was decided for.
func (t *Tracing) settled(ctx context.Context, span trace.Span, deliveries []messaging.Delivery) {
	for _, delivery := range deliveries {
		decision, ok := messaging.DecisionOf(ctx, delivery)
		if !ok {
			continue
		}
		name, outcome := eventOf(decision.Verdict)
		if name == "" {
			continue
		}
		attributes := []attribute.KeyValue{keyMessageID.String(delivery.MessageID), keyOutcome.String(outcome)}
		if decision.Reason != nil {
			attributes = append(attributes, keyReason.String(decision.Reason.Error()))
		}
		if decision.Verdict == messaging.InProgressed {
			attributes = append(attributes, keyDelay.Int64(decision.Delay.Milliseconds()))
		}
		span.AddEvent(name, trace.WithAttributes(attributes...))
		if len(deliveries) == 1 {
			span.SetAttributes(keyOutcome.String(outcome))
		}
		if decision.Verdict == messaging.Rejected {
			span.SetStatus(codes.Error, "a message was dead-lettered")
		}
	}
}

// eventOf names the span event and the outcome of a verdict; an accepted or
// undecided message gets no event.
func eventOf(verdict messaging.Verdict) (event, outcome string) {
	switch verdict {
	case messaging.Retried:
		return "message.retried", "retried"
	case messaging.Rejected:
		return "message.dead_lettered", "dead_lettered"
	case messaging.Parked:
		return "message.parked", "parked"
	case messaging.InProgressed:
		return "message.in_progress", "in_progress"
	default:
		return "", ""
	}
}

// appendMessageAttributes appends what a batch of one says about its message.
func appendMessageAttributes(attributes []attribute.KeyValue, delivery messaging.Delivery) []attribute.KeyValue {
	attributes = append(attributes,
		keyMessageID.String(delivery.MessageID),
		keyRoutingKey.String(delivery.RoutingKey),
		keyAttempt.Int(delivery.Attempt),
	)
	if delivery.CorrelationID != "" {
		attributes = append(attributes, keyConversation.String(delivery.CorrelationID))
	}
	if delivery.MessageType != "" {
		attributes = append(attributes, keyMessageType.String(delivery.MessageType))
	}
	return attributes
}

// runEvents writes a finished pipeline run onto the span of the context it is
// told under, then tells the observer that was installed before it.
type runEvents struct{ next flow.RunObserver }

func (r runEvents) RunFinished(ctx context.Context, run flow.RunFinished) {
	trace.SpanFromContext(ctx).AddEvent("pipeline.run_finished", trace.WithAttributes(
		keyPipeline.String(run.Pipeline),
		keyStep.String(run.Step),
		keyOutcome.String(run.Outcome),
		keyMessageID.String(run.MessageID),
		keyRunID.String(run.RunID),
		attribute.Int64("messaging.acemq.age_ms", run.Age.Milliseconds()),
	))
	if r.next != nil {
		r.next.RunFinished(ctx, run)
	}
}
