// Package streams reads and declares RabbitMQ stream queues: append-only logs
// the broker keeps until retention removes them, where reading removes
// nothing and every reader holds its own position.
//
//	err := streams.Declare(ctx, conn, "orders.log", streams.Retention{MaxAge: 7 * 24 * time.Hour, MaxBytes: 10 << 30})
//	reader, err := streams.Read(ctx, transport, "orders.log", projection,
//		streams.Options.From(streams.FromOffset(saved+1)),
//		streams.Options.Prefetch(500),
//		streams.Options.Name("projection-a"))
//	defer reader.Close()
//
// Read is the streaming runtime over a Connector decorator that sends the
// offset (and resumes it after a dropped connection), with the runtime's
// settlement around a middleware that refuses Retry and InProgress. See
// doc/streams.md.
//
// Declare(ctx, conn, name, Retention) declares a durable queue of type
// stream (neither exclusive nor auto-delete) through the connection's
// messaging.Declarer, found through decorators; MaxAgeText renders x-max-age
// with the largest exact unit (7D, 1D, 90m, 1h, 45s; 1.5 s is 1s);
// MaxBytes is x-max-length-bytes and SegmentBytes
// x-stream-max-segment-size-bytes, both absent unless set. Retention{} is
// legal and almost always a mistake (Declare logs a WARN). Queue and Plan are
// the declaration in the topology package's terms.
//
// Read(ctx, connector, name, handler, options...) returns a *Reader once the
// consumer started (a missing stream matches messaging.ErrNotFound), after
// asking the transport whether it consumes streams (ErrUnsupported on
// memory, before anything is declared). x-stream-offset is always sent:
// FromFirst, FromLast, FromNext (no offset stated), FromOffset (an int64) or
// FromTimestamp (whole seconds). The prefetch is 10 unless stated; the
// consumer tag is Options.Name exactly, acemq-{stream} without one. After a
// dropped connection the reader is reattached at the oldest offset handed
// over and not settled, or one past the newest settled (Monitor.Resumed); a
// new Read starts at the stated offset again: carry a checkpoint across
// restarts (Checkpoints: From before Read, Save in the handler's
// transaction). OffsetOf(delivery) reads x-stream-offset of any integer
// width and tells offset 0 from no offset.
//
// Settlement on a stream: returning normally or messaging.Accept
// acknowledges (which advances this consumer and copies nothing);
// messaging.Reject and Park copy the message to {stream}.dlq or
// {stream}.parked (declared when the reader starts; the stream itself is never
// declared or appended to by Read); messaging.Retry and messaging.InProgress
// are refused, because a republish would append a second copy to the log, and
// the message is parked with a *RetryOnStreamError that wraps the handler's
// reason (RefuseRetry is the middleware; the runtime's own refusal is the
// backstop).
//
// For the CLI's stream tail: ParseOffset reads --from
// (first|last|next|OFFSET|RFC 3339 time|duration ago), Tail reads a stream
// with the transport's own reader, declaring and setting aside nothing, and
// TailLine formats the offset, envelope and a body preview.
//
// The capability question is a method SupportsStreams() bool on a
// transport's Connector or Connection (rabbitmq true, memory false).
package streams
