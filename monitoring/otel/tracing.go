package otel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span this package starts.
const ScopeName = "github.com/warrenmq/messaging/monitoring/otel"

// Attribute keys of the messaging semantic conventions, and AceMQ's own under
// messaging.acemq.
const (
	keySystem        = attribute.Key("messaging.system")
	keyDestination   = attribute.Key("messaging.destination.name")
	keyOperationType = attribute.Key("messaging.operation.type")
	keyOperationName = attribute.Key("messaging.operation.name")
	keyMessageID     = attribute.Key("messaging.message.id")
	keyConversation  = attribute.Key("messaging.message.conversation_id")
	keyRoutingKey    = attribute.Key("messaging.rabbitmq.destination.routing_key")
	keyBatchCount    = attribute.Key("messaging.batch.message_count")
	keyMessageType   = attribute.Key("messaging.acemq.message_type")
	keyAttempt       = attribute.Key("messaging.acemq.attempt")
	keyOutcome       = attribute.Key("messaging.acemq.outcome")
	keyReason        = attribute.Key("messaging.acemq.reason")
	keyDelay         = attribute.Key("messaging.acemq.delay_ms")
	keyPipeline      = attribute.Key("messaging.acemq.pipeline")
	keyStep          = attribute.Key("messaging.acemq.step")
	keyRunID         = attribute.Key("messaging.acemq.route_id")
)

var systemRabbitMQ = keySystem.String("rabbitmq")

// Tracing starts the spans of publishing, storing and handling messages and
// carries the trace context in their headers. Its methods decorate the
// library's parts the way monitoring/prometheus's monitors plug into them:
//
//	tracing := otel.New(otel.Options.TracerProvider(provider))
//	transport := tracing.Transport(rabbitmq.New(...))        // publish spans, the relay's too
//	outbox, relay := sqlmq.New(transport, ...)
//	stored := tracing.Outbox(outbox)                          // create spans, context stored with the row
//	handler := deadletter.New(transport, tracing.Handler(retry.New(...)))
//
// A Tracing is safe for concurrent use.
type Tracing struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	fields     int
}

// New returns a Tracing over the configured tracer provider and propagator.
func New(options ...Option) *Tracing {
	c := newConfig(options)
	return &Tracing{
		tracer:     c.provider.Tracer(ScopeName),
		propagator: c.propagator,
		fields:     len(c.propagator.Fields()),
	}
}

// Extract returns ctx carrying, as its remote parent, the trace context the
// headers hold through the configured propagator: what a handler that reads
// deliveries by hand would call. Headers without one, or with a malformed
// one, leave ctx's span as it was.
func (t *Tracing) Extract(ctx context.Context, headers map[string]any) context.Context {
	return t.propagator.Extract(ctx, carrierOf(headers))
}

// Inject writes ctx's trace context into headers through the configured
// propagator; what a hand-built dispatch that bypasses the decorators would call.
// headers must not be nil.
func (t *Tracing) Inject(ctx context.Context, headers map[string]any) {
	t.propagator.Inject(ctx, carrierOf(headers))
}

// remote reads the span context a message's headers carry; invalid when they
// carry none or a malformed one.
func (t *Tracing) remote(values map[string]any) trace.SpanContext {
	if len(values) == 0 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(t.propagator.Extract(context.Background(), carrierOf(values)))
}

func carrierOf(values map[string]any) headers { return headers(values) }
