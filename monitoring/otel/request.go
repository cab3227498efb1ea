package otel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/request"
)

// Ask is requester.Do under a CLIENT span "<destination> request" (AceMQ's
// otel.Ask): the request's publish, when the requester writes
// through Transport, is its child, and so is the responder's serve span.
// destination names what is asked (the routing key the requester was made
// with). The span's outcome is answered, timed_out or failed, the request
// monitor's words; only failed is an error, a timeout is an answer too.
func Ask[Req, Resp any](ctx context.Context, t *Tracing, requester *request.Requester[Req, Resp], destination string, message Req) (Resp, error) {
	ctx, span := t.tracer.Start(ctx, spanName(destination, "request"),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(systemRabbitMQ, keyOperationName.String("request"), keyDestination.String(destination)))
	defer span.End()
	response, err := requester.Do(ctx, message)
	switch {
	case err == nil:
		span.SetAttributes(keyOutcome.String(request.OutcomeAnswered))
	case errors.Is(err, request.ErrRequestTimedOut):
		span.SetAttributes(keyOutcome.String(request.OutcomeTimedOut))
	default:
		span.SetAttributes(keyOutcome.String(request.OutcomeFailed))
		span.RecordError(err)
		span.SetStatus(codes.Error, "the request failed")
	}
	return response, err
}

// Respond wraps a responder's function (request.Serve's, or NewHandler's) in
// a SERVER span "<queue> serve" whose parent is the request's trace context,
// carried in its headers; a request without one (or with a malformed one) is
// served under the context's span, or a fresh trace. An error the function
// returns (the reply then carries acemq-error) marks the span failed.
func Respond[Req, Resp any](t *Tracing, fn request.Func[Req, Resp]) request.Func[Req, Resp] {
	return func(ctx context.Context, delivery messaging.Delivery, message Req) (Resp, error) {
		if remote := t.remote(delivery.Headers); remote.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
		}
		attributes := appendMessageAttributes(
			[]attribute.KeyValue{systemRabbitMQ, keyOperationName.String("serve"), keyDestination.String(delivery.SourceQueue)}, delivery)
		ctx, span := t.tracer.Start(ctx, spanName(delivery.SourceQueue, "serve"),
			trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attributes...))
		returned := false
		defer func() {
			if !returned {
				span.SetAttributes(keyOutcome.String(request.OutcomeFailed))
				span.SetStatus(codes.Error, "the responder panicked")
			}
			span.End()
		}()
		response, err := fn(ctx, delivery, message)
		returned = true
		if err != nil {
			span.SetAttributes(keyOutcome.String(request.OutcomeFailed))
			span.RecordError(err)
			span.SetStatus(codes.Error, "the responder failed")
		}
		return response, err
	}
}
