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
// Rows of the patterns map (ST1-ST30, ID9), as built here:
//
//   - ST1, ST2 Declare(ctx, conn, name, Retention) declares a durable queue of
//     type stream (neither exclusive nor auto-delete) through the
//     connection's messaging.Declarer, found through decorators.
//   - ST3 MaxAgeText renders x-max-age with the largest exact unit: 7D, 1D,
//     90m, 1h, 45s; 1.5 s is 1s, and an age under a second is 1s.
//   - ST4, ST5 MaxBytes is x-max-length-bytes, SegmentBytes
//     x-stream-max-segment-size-bytes, both int64 and absent unless set.
//   - ST6 Retention{} is legal; Declare logs one WARN (slog.Default()) and
//     the docs say it is almost always a mistake.
//   - ST7 Queue(name, r) and Plan(name, r) are the declaration in the
//     topology contract (topology.Plan prints, merges and checks it).
//   - ST8 Read(ctx, connector, name, handler, options...) returns a *Reader
//     (Close) once the consumer started; errors of the first start are
//     returned (a missing stream matches messaging.ErrNotFound).
//   - ST9 Read asks the transport first (Supported: the Connector, else a
//     connection's SupportsStreams through Unwrap) and returns ErrUnsupported
//     with the seed's text on memory before declaring or consuming anything.
//   - ST10 Declare on memory records the declaration and succeeds.
//   - ST11, ST12 FromFirst, FromLast, FromNext, FromOffset, FromTimestamp;
//     x-stream-offset is always sent: "first"/"last"/"next", int64 (clamped),
//     an AMQP timestamp (whole seconds); no offset stated is "next".
//   - ST13 Options.Prefetch, DefaultPrefetch 10 when zero or negative.
//   - ST14 Options.Name is the exact consumer tag (StreamConfig.ExactConsumerTag).
//   - ST15 nothing remembers a position across a restart: a new Read starts
//     at the stated offset.
//   - ST16 after a dropped connection the runtime reattaches the reader at the
//     oldest offset handed over and not settled, or one past the newest
//     settled (Monitor.Resumed); queue consumers are unaffected (only the
//     stream Read consumes is rewritten).
//   - ST17 the broker's x-stream-offset header stays on Delivery.Headers.
//   - ST18 OffsetOf(delivery) (uint64, bool): any integer width; negative,
//     float, text or absent reads false, so offset 0 is told from nothing.
//   - ST19 checkpoint: the docs and a broker test save the offset in the
//     projection's own SQL transaction and resume with FromOffset(saved+1).
//   - ST20 no LastHandledOffset and no handled/failed/skipped counters.
//   - ST21, ST22, ID9 messaging.Retry and messaging.InProgress park the
//     message on {stream}.parked with a *RetryOnStreamError (the seed's text
//     with this library's verbs, the offset part left out when the delivery
//     has none) that wraps the handler's reason; RefuseRetry is the
//     middleware; the runtime's own RefuseRetry is the backstop. The parked
//     copy's x-acemq-error reads "the handler parked it: " before the text.
//   - ST23 messaging.Reject and Park copy to {stream}.dlq / {stream}.parked,
//     declared (classic, durable) when the consumer starts; the stream itself
//     is never declared or appended to by Read.
//   - ST24, ST25 returning normally or messaging.Accept acknowledges, which
//     advances this consumer and copies nothing.
//   - ST26, ST27 stopping without checkpointing, and replaying a .dlq back
//     onto a stream, are in the docs.
//   - ST28 broker tests on the local RabbitMQ: two readers, exact offset,
//     timestamp, next, what Read sends and declares, Retry parks one copy and
//     the stream still holds 100, InProgress parked, 10,000 messages across
//     three close_all_connections, the checkpoint restart, 7D and the
//     precondition failures on redeclaring (another age, classic), a missing
//     stream (ErrNotFound), Tail. BenchmarkStreamConsume reads one stream
//     through the raw client and through Read in each round.
//   - ST29 one messaging.Handler; the refusal happens at the verb.
//   - ST30 the docs say what a stream is for and not for.
//
// For the CLI (issue 16's stream tail): ParseOffset reads --from
// (first|last|next|OFFSET|RFC 3339 time|duration ago), Tail reads a stream
// with the transport's own reader, declaring and setting aside nothing, and
// TailLine formats the offset, envelope and a body preview.
//
// The capability question is a method SupportsStreams() bool on a
// transport's Connector or Connection (rabbitmq true, memory false).
package streams
