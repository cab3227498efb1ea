// Package serialization decorates a messaging.Connector, at every level, so
// that writers encode Dispatch.Message into Payload and streams decode
// Delivery.Payload into Delivery.Message. JSON is the default encoding.
//
// Wrap the transport for consuming and the outbox for handlers, each
// separately: an outbox wrapped by serialization stores encoded payloads, so its
// publisher needs no type registry.
//
// A delivery that cannot be decoded does not fail Stream.Read (the same message
// would come back for ever): it is returned with a nil Message and
// Delivery.Undecodable set to an error that says why, and the runtime parks it.
// The Ignore* options hand such a delivery to the handler with a nil Message
// instead.
package serialization

import (
	"context"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/decorate"
)

type connector struct {
	messaging.Connector
	config *config
}

// New returns a Connector over inner whose writers encode and whose streams
// decode, as configured by options.
func New(inner messaging.Connector, options ...Option) messaging.Connector {
	c := newConfig(options)
	return connector{Connector: inner, config: &c}
}

// Unwrap returns the decorated connector, so messaging.As finds what the
// transport's connector offers (whether it consumes stream queues, say).
func (c connector) Unwrap() messaging.Connector { return c.Connector }

// Connect opens an inner connection and decorates it.
func (c connector) Connect(ctx context.Context) (messaging.Connection, error) {
	inner, err := c.Connector.Connect(ctx)
	return decorate.Opened("serialization", "connection", inner, err, func(inner messaging.Connection) messaging.Connection {
		return connection{Connection: inner, config: c.config}
	})
}

type connection struct {
	messaging.Connection
	config *config
}

// Unwrap returns the decorated connection, so messaging.As finds the
// transport's capabilities (a messaging.Declarer, say) beneath the codec.
func (c connection) Unwrap() messaging.Connection { return c.Connection }

// Reader opens an inner reader and decorates it.
func (c connection) Reader(ctx context.Context) (messaging.Reader, error) {
	inner, err := c.Connection.Reader(ctx)
	return decorate.Opened("serialization", "reader", inner, err, func(inner messaging.Reader) messaging.Reader {
		return reader{Reader: inner, config: c.config}
	})
}

// Writer opens an inner writer and decorates it.
func (c connection) Writer(ctx context.Context) (messaging.Writer, error) {
	inner, err := c.Connection.Writer(ctx)
	return decorate.Opened("serialization", "writer", inner, err, func(inner messaging.Writer) messaging.Writer {
		return writer{Writer: inner, config: c.config}
	})
}

// CommitWriter opens an inner commit writer and decorates it. The context
// reaches the inner connection unchanged, so an outbox can fill its
// messaging.TransactionSlot.
func (c connection) CommitWriter(ctx context.Context) (messaging.CommitWriter, error) {
	inner, err := c.Connection.CommitWriter(ctx)
	return decorate.Opened("serialization", "commit writer", inner, err, func(inner messaging.CommitWriter) messaging.CommitWriter {
		return commitWriter{CommitWriter: inner, config: c.config}
	})
}

type reader struct {
	messaging.Reader
	config *config
}

// Unwrap returns the decorated reader, so messaging.As finds its capabilities.
func (r reader) Unwrap() messaging.Reader { return r.Reader }

// Stream opens an inner stream and decorates it.
func (r reader) Stream(ctx context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	inner, err := r.Reader.Stream(ctx, config)
	return decorate.Opened("serialization", "stream", inner, err, func(inner messaging.Stream) messaging.Stream {
		return stream{Stream: inner, config: r.config}
	})
}
