// Package messaging declares the transport-neutral vocabulary that every other
// package of this module speaks: connectors that open connections, readers and
// streams that deliver messages, writers that publish them, and handlers that
// consume them. Capabilities (outbox, serialization, transactions, retry,
// settlement, patterns) are decorators over these small contracts.
package messaging

import (
	"context"
	"io"
	"time"
)

// Listener is a background processor with a blocking Listen that returns when the
// processor has stopped.
type Listener interface {
	Listen()
}

// ListenCloser is a Listener that can be told to stop. Close asks Listen to return
// and waits, within the component's own bounds, for it to do so.
type ListenCloser interface {
	Listener
	io.Closer
}

// Handler consumes a batch of messages. It returns nothing: failure is a panic,
// which the retry and settlement decorators recover. The stream acknowledges the
// batch only after Handle returns.
type Handler interface {
	Handle(ctx context.Context, messages ...any)
}

// HandlerFunc adapts a plain function to the Handler contract.
type HandlerFunc func(ctx context.Context, messages ...any)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, messages ...any) { f(ctx, messages...) }

// Connector opens connections to a transport. Closing it closes every
// connection it opened that is still open.
type Connector interface {
	Connect(ctx context.Context) (Connection, error)
	io.Closer
}

// Connection produces readers and writers that share one underlying link to the
// transport.
type Connection interface {
	Reader(ctx context.Context) (Reader, error)
	Writer(ctx context.Context) (Writer, error)
	CommitWriter(ctx context.Context) (CommitWriter, error)
	io.Closer
}

// Reader opens streams of deliveries.
type Reader interface {
	Stream(ctx context.Context, config StreamConfig) (Stream, error)
	io.Closer
}

// Stream delivers messages one at a time and acknowledges them once handled.
type Stream interface {
	// Read blocks until a delivery arrives, the context ends, or the stream
	// fails. The caller owns delivery: the streaming runtime hands Read a
	// zeroed Delivery it reuses once the delivery is acknowledged, so Read
	// keeps no pointer to it and writes nothing to it after returning, even
	// when it returns an error.
	Read(ctx context.Context, delivery *Delivery) error
	// Acknowledge settles the given deliveries with the broker. It keeps
	// neither the slice nor its values past the call: the caller reuses both.
	Acknowledge(ctx context.Context, deliveries ...Delivery) error
	io.Closer
}

// Writer publishes dispatches. It returns how many were accepted and, when not all
// were, an error (a *PublishError when the transport can say which failed).
type Writer interface {
	Write(ctx context.Context, dispatches ...Dispatch) (int, error)
	io.Closer
}

// CommitWriter is a Writer whose writes take effect together on Commit. Commit
// returns when every written dispatch is durable (confirmed and routed by the
// broker, or committed to storage by an outbox); Rollback forgets what was not
// committed.
type CommitWriter interface {
	Writer
	Commit() error
	Rollback() error
}

// Dispatch is an outbound message. Only Message (with a serializer) or Payload is
// required; the transport fills the envelope defaults (id, correlation, attempt,
// first seen, origin) when they are empty.
type Dispatch struct {
	// Topic is the exchange to publish to; empty means the default exchange.
	Topic string
	// RoutingKey is the routing key (the queue name on the default exchange).
	RoutingKey string

	MessageID     string
	CorrelationID string
	CausationID   string
	ReplyTo       string
	MessageType   string
	// Version is the message schema version; 0 is written as 1.
	Version         int
	ContentType     string
	ContentEncoding string
	// Attempt counts deliveries for retry republishes; 0 is written as 1.
	Attempt int
	// FirstSeen is when the message first entered the system; zero means now.
	FirstSeen time.Time
	// Origin names the producing service as service@host; empty means the
	// transport's default.
	Origin string
	// Error is the reason a dead-lettered or parked copy was set aside.
	Error string
	// Claim is reserved for applications (x-acemq-claim).
	Claim string
	// Route, RoutePosition and RouteID carry a declared pipeline route.
	Route         []string
	RoutePosition int
	RouteID       string

	// Expiration is the per-message TTL; it travels in milliseconds. Zero means none.
	Expiration time.Duration
	// Timestamp is the AMQP timestamp property; zero means now.
	Timestamp time.Time
	// Transient asks for a non-persistent message. The zero value is persistent.
	Transient bool
	// Mandatory makes an unroutable message an error instead of a silent drop.
	Mandatory bool
	// Headers are the application's own headers; x-acemq- names are reserved.
	Headers map[string]any
	// Payload is the encoded body.
	Payload []byte
	// Message is the value a serializer encodes into Payload.
	Message any
	// Verbatim marks a copy of a message that arrived (Delivery.Redispatch):
	// an envelope value too long for its AMQP property (MessageID,
	// CorrelationID, MessageType) travels in its x-acemq- header alone instead
	// of being refused, so a foreign message with odd fields can always be set
	// aside. Applications leave it false and get ErrWireLimit instead.
	Verbatim bool
}

// Delivery is an inbound message: the envelope of a Dispatch plus where and how it
// arrived.
type Delivery struct {
	// DeliveryID is the broker's delivery tag on the stream's channel.
	DeliveryID uint64
	// SourceQueue is the queue the delivery was read from.
	SourceQueue string
	// Topic and RoutingKey are the exchange and key the message was published under.
	Topic      string
	RoutingKey string
	// Redelivered is the broker's flag: the message was delivered before and not
	// acknowledged.
	Redelivered bool

	MessageID       string
	CorrelationID   string
	CausationID     string
	ReplyTo         string
	MessageType     string
	Version         int
	ContentType     string
	ContentEncoding string
	Attempt         int
	FirstSeen       time.Time
	Origin          string
	Error           string
	Claim           string
	Route           []string
	RoutePosition   int
	RouteID         string
	Expiration      time.Duration
	Timestamp       time.Time
	Durable         bool
	// Headers holds the application's headers; every x-acemq- header is removed
	// and its value moved onto the fields above.
	Headers map[string]any
	Payload []byte
	// Message is the decoded value, set by a serializer.
	Message any
	// Undecodable is set by a serializer that could not decode the payload; the
	// runtime parks such a delivery instead of handing it to a handler.
	Undecodable error
	// Upstream is the transport's own value (an amqp091.Delivery for RabbitMQ).
	Upstream any
}
