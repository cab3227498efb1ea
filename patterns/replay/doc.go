// Package replay moves messages out of a dead-letter (or parking) queue and
// back to where they can be handled, as one function over a transport's
// Connector.
//
//	result, err := replay.Run(ctx, transport, replay.From{
//		Queue: "orders.dlq", // back to orders, through the default exchange
//		Limit: 500,
//		Filter: func(d messaging.Delivery) bool {
//			return strings.Contains(d.Error, "timeout")
//		},
//	})
//	fmt.Println(result) // moved 500, skipped 31 (limit)
//
// Give it the raw transport (rabbitmq.New, memory.New), not a serialization
// decorator: bodies move as bytes and are never decoded, because a body
// nobody could decode is exactly what ends up in a dead-letter queue. The
// transport's own Writer publishes the copies, persistent, so no
// serialization or interceptor runs. warrenmq replay is the same pass from
// the command line.
//
// # What to replay, and where
//
// From names the queue to read and, optionally, the destination: Topic (an
// exchange; "" is the default exchange) and RoutingKey. Without a
// RoutingKey, a copy goes back to the queue the set-aside queue holds
// messages for (SourceOf: orders for orders.dlq and orders.parked), since a
// set-aside copy arrived under the key {queue}.dlq and its original key is
// not kept; for another queue, with a Topic, each copy keeps the key it
// arrived with. A pass whose destination is the queue it reads is refused
// before connecting, and one whose copies come back to it stops (Failed)
// instead of looping. Limit, Deadline and the caller's ctx end a pass early;
// Filter picks the messages to move (Delivery.Error is the reason a message
// was set aside, Payload its body, Headers its application headers); DryRun
// reads and filters without publishing or acknowledging anything.
//
// Run returns a Result{Moved, Skipped, Reason}, printed as "moved 500,
// skipped 31 (limit)"; Reason is Drained (the queue is empty), Limit,
// Deadline, Cancelled or Failed.
//
// # What it guarantees
//
//   - The queue is read with the transport's poll mode (basic.get, one
//     message at a time) until it is empty (messaging.ErrQueueEmpty).
//   - An original is acknowledged only after Writer.Write returned, which is
//     after the broker confirmed and routed its copy: a crash in between
//     gives a duplicate, never a loss. Copies are published up to 64 at a
//     time with their confirms awaited together, and only the originals
//     whose copies landed are acknowledged.
//   - Copies are mandatory: an unroutable one stops the pass with Failed and
//     an error matching messaging.ErrUnroutable (a *messaging.PublishError),
//     and its original goes back to its queue.
//   - Declined messages are held unacknowledged until the pass ends, then
//     returned together by closing the stream (one by one would hand the
//     same message back at the head of the queue). A pass that fails (a
//     lost connection, a refused publish) returns what it holds the same
//     way; run it again to continue.
//
// # Wire contract
//
// A copy is the original's envelope (messaging.Delivery.Redispatch: the same
// id, type, first-seen time and headers), started again at attempt 1 with no
// x-acemq-error unless From.KeepAttempts. Every copy is stamped with
// HeaderReplayedFrom (acemq-replayed-from, the queue read), HeaderReplayedAt
// (acemq-replayed-at, RFC 3339 in UTC) and HeaderReplayCount
// (acemq-replay-count: the previous count, read in any integer width or as
// text, plus one, written as a signed 32-bit integer). They are unprefixed,
// outside the reserved x-acemq- namespace, so they reach handlers, and the
// other AceMQ libraries write the same names. The x-acemq-replayed-* stamps
// some operators' tools write are removed on consume, with every other
// x-acemq- header the envelope does not carry. The envelope headers and the
// rest of the AceMQ family's contract are in doc/contracts.md;
// doc/patterns-replay.md has the whole story.
//
// # Options
//
// Each(func(delivery, verdict)) hears every message read and what became of
// it (Moved, or Declined by the filter); Monitor (NopMonitor) counts moved
// and declined messages and finished passes.
package replay
