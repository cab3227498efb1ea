// Package otel traces messages with OpenTelemetry: a request that writes an
// outbox row, the relay's publish of it, the consumer's handling and the
// messages that handling causes show up as one trace, without the
// application passing anything by hand. The trace context travels in the
// W3C headers traceparent and tracestate, plain application headers (not
// x-acemq-), which AceMQ's other libraries read and write the same way.
//
// Only the OpenTelemetry API is imported; the application chooses the SDK,
// the exporter and the sampler, and hands this package its TracerProvider.
// Like monitoring/prometheus it is an adapter: no core package imports it,
// and the two are used side by side (a metrics Monitor and a tracing
// decorator on the same transport).
//
//	tracing := otel.New(otel.Options.TracerProvider(provider))
//	transport := tracing.Transport(rabbitmq.New(...))
//	outbox, relay := sqlmq.New(transport, sqlmq.Options.StorageHandle(db))
//	stored := tracing.Outbox(outbox)
//	handler := deadletter.New(transport, tracing.Handler(retry.New(inner)))
//
// What it traces, part by part (the AceMQ family's tracing contract):
//
//   - Propagation: a dispatch written through Transport or Outbox carries
//     its span's context in its headers (through the configured propagator,
//     W3C trace context by default), on a copy: the caller's header map is
//     never changed. Handler extracts it from each delivery.
//   - The outbox: Outbox's span "<destination> create" (PRODUCER) is
//     started in the writer's context (the request), and the row stores its
//     context with the other headers. The relay publishes through Transport
//     on a context with no span, so its "<destination> publish" (PRODUCER)
//     continues the stored context: the published message belongs to the
//     request's trace, not the relay's. A copy written under a span of its
//     own (a retry or a set-aside copy, written from a handler) is that
//     span's child and links the context the copy carried.
//   - "<queue> process" (CONSUMER) for each batch: its parent is the
//     message's trace context, not the consumer's ambient span; a batch of
//     one trace has its first message as the parent and links other spans of
//     that trace, a batch of several traces starts a trace with one link per
//     message. A malformed or absent traceparent is handled as any other
//     message, under a fresh trace.
//   - Settlement as span events on the process span, read with
//     messaging.DecisionOf after the inner handler returned:
//     message.retried, message.dead_lettered, message.parked,
//     message.in_progress, with the message id, the reason and the delay;
//     status Error only for a dead-lettered message, an unroutable or failed
//     publish, and a handler that panicked.
//   - pipeline.run_finished (patterns/flow): Handler installs a
//     flow.RunObserver on the context it hands on that writes the event onto
//     the process span, and then tells the observer installed before it.
//   - Request and reply (patterns/request): Ask is a Requester's Do under a
//     CLIENT span "<destination> request" (outcome answered, timed_out or
//     failed; only failed is an error); Respond wraps a responder's function
//     in a SERVER span "<queue> serve" under the request's trace context, so
//     the request's publish and its serving are its children.
//   - Attributes: messaging.system=rabbitmq, messaging.destination.name,
//     messaging.operation.type (create, send, process) and .name (create,
//     publish, process), messaging.message.id, messaging.message.conversation_id
//     (the correlation id), messaging.rabbitmq.destination.routing_key,
//     messaging.batch.message_count, and AceMQ's messaging.acemq.message_type,
//     .attempt and .outcome.
//
// One limit: a message's id is recorded when the writer set it; one the
// transport fills in later is not on the publish span.
package otel
