package otel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/decorate"
)

// operation is what a decorated connector's writes do to a message.
type operation struct {
	// verb ends the span name and is messaging.operation.name.
	verb string
	// kind is messaging.operation.type.
	kind string
}

var (
	// publishing: the broker receives the message now.
	publishing = operation{verb: "publish", kind: "send"}
	// creating: the outbox stores the message for a later publish.
	creating = operation{verb: "create", kind: "create"}
)

// Transport decorates the connector that publishes to the broker (the
// transport under the outbox, the one settlement republishes through): each
// dispatch written gets a PRODUCER span "<destination> publish" and carries
// that span's context in its headers. The span's parent is the writer's
// context; a writer whose context has no span (the outbox relay, on a
// goroutine of its own) continues the trace the dispatch's stored headers
// carry, so the relay's publish belongs to the request that wrote the row.
// Readers are not changed.
func (t *Tracing) Transport(connector messaging.Connector) messaging.Connector {
	return &tracedConnector{Connector: connector, tracing: t, op: publishing}
}

// Outbox decorates the outbox's connector (sqlmq.New's first result): each
// dispatch written in a transaction gets a PRODUCER span "<destination>
// create" under the writer's context, and the row stores that span's context
// in its headers, so the publish the relay makes later continues it.
func (t *Tracing) Outbox(connector messaging.Connector) messaging.Connector {
	return &tracedConnector{Connector: connector, tracing: t, op: creating}
}

type tracedConnector struct {
	messaging.Connector
	tracing *Tracing
	op      operation
}

// Unwrap returns the decorated connector, so messaging.As finds what it offers.
func (c *tracedConnector) Unwrap() messaging.Connector { return c.Connector }

func (c *tracedConnector) Connect(ctx context.Context) (messaging.Connection, error) {
	connection, err := c.Connector.Connect(ctx)
	return decorate.Opened("tracing", "connection", connection, err, func(connection messaging.Connection) messaging.Connection {
		return &tracedConnection{Connection: connection, tracing: c.tracing, op: c.op}
	})
}

type tracedConnection struct {
	messaging.Connection
	tracing *Tracing
	op      operation
}

// Unwrap returns the decorated connection, so messaging.As finds its
// capabilities (its messaging.Declarer, say) beneath the spans.
func (c *tracedConnection) Unwrap() messaging.Connection { return c.Connection }

func (c *tracedConnection) Writer(ctx context.Context) (messaging.Writer, error) {
	writer, err := c.Connection.Writer(ctx)
	return decorate.Opened("tracing", "writer", writer, err, func(writer messaging.Writer) messaging.Writer {
		return &tracedWriter{Writer: writer, tracing: c.tracing, op: c.op}
	})
}

func (c *tracedConnection) CommitWriter(ctx context.Context) (messaging.CommitWriter, error) {
	writer, err := c.Connection.CommitWriter(ctx)
	return decorate.Opened("tracing", "commit writer", writer, err, func(writer messaging.CommitWriter) messaging.CommitWriter {
		return &tracedCommitWriter{CommitWriter: writer, traced: tracedWriter{Writer: writer, tracing: c.tracing, op: c.op}}
	})
}

type tracedWriter struct {
	messaging.Writer
	tracing *Tracing
	op      operation
}

// Unwrap returns the decorated writer, so messaging.As finds its capabilities.
func (w *tracedWriter) Unwrap() messaging.Writer { return w.Writer }

func (w *tracedWriter) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	if len(dispatches) == 0 {
		return w.Writer.Write(ctx, dispatches...)
	}
	traced := make([]messaging.Dispatch, len(dispatches))
	spans := make([]trace.Span, len(dispatches))
	for i, dispatch := range dispatches {
		traced[i], spans[i] = w.tracing.produce(ctx, w.op, dispatch)
	}
	n, err := w.Writer.Write(ctx, traced...)
	failed := failures(err)
	for i, span := range spans {
		if i >= n || failed[traced[i].MessageID] != nil {
			cause := failed[traced[i].MessageID]
			if cause == nil {
				cause = err
			}
			if cause != nil {
				span.RecordError(cause)
				span.SetStatus(codes.Error, outcomeOf(cause))
				span.SetAttributes(keyOutcome.String(outcomeOf(cause)))
			}
		}
		span.End()
	}
	return n, err
}

type tracedCommitWriter struct {
	messaging.CommitWriter
	traced tracedWriter
}

// Unwrap returns the decorated commit writer, so messaging.As finds its
// capabilities.
func (w *tracedCommitWriter) Unwrap() messaging.CommitWriter { return w.CommitWriter }

func (w *tracedCommitWriter) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	return w.traced.Write(ctx, dispatches...)
}

// produce starts the dispatch's span and returns a copy of the dispatch whose
// headers carry it.
func (t *Tracing) produce(ctx context.Context, op operation, dispatch messaging.Dispatch) (messaging.Dispatch, trace.Span) {
	destination := dispatch.Topic
	if destination == "" {
		destination = dispatch.RoutingKey
	}
	attributes := make([]attribute.KeyValue, 0, 7)
	attributes = append(attributes,
		systemRabbitMQ,
		keyOperationType.String(op.kind),
		keyOperationName.String(op.verb),
		keyDestination.String(destination),
		keyRoutingKey.String(dispatch.RoutingKey),
	)
	if dispatch.MessageID != "" {
		attributes = append(attributes, keyMessageID.String(dispatch.MessageID))
	}
	if dispatch.MessageType != "" {
		attributes = append(attributes, keyMessageType.String(dispatch.MessageType))
	}
	options := make([]trace.SpanStartOption, 0, 3)
	options = append(options, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attributes...))
	parent := ctx
	if stored := t.remote(dispatch.Headers); stored.IsValid() {
		if trace.SpanContextFromContext(ctx).IsValid() {
			// A copy of a message that arrived (a retry, a set-aside copy)
			// belongs to the span writing it and remembers where it came from.
			if !stored.Equal(trace.SpanContextFromContext(ctx)) {
				options = append(options, trace.WithLinks(trace.Link{SpanContext: stored}))
			}
		} else {
			parent = trace.ContextWithRemoteSpanContext(ctx, stored)
		}
	}
	spanCtx, span := t.tracer.Start(parent, spanName(destination, op.verb), options...)
	carrier := withFields(dispatch.Headers, t.fields)
	t.propagator.Inject(spanCtx, carrier)
	dispatch.Headers = carrier
	return dispatch, span
}

// failures maps a *messaging.PublishError's failed messages by id.
func failures(err error) map[string]error {
	var publishErr *messaging.PublishError
	if !errors.As(err, &publishErr) {
		return nil
	}
	failed := make(map[string]error)
	for _, result := range publishErr.Failed() {
		if result.MessageID != "" {
			failed[result.MessageID] = result.Err
		}
	}
	return failed
}

// outcomeOf names a failed write the way AceMQ's counters do.
func outcomeOf(err error) string {
	if errors.Is(err, messaging.ErrUnroutable) {
		return "unroutable"
	}
	return "failed"
}

func spanName(destination, verb string) string {
	if destination == "" {
		return verb
	}
	return destination + " " + verb
}
