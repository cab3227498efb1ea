// Package replay moves messages out of a dead-letter (or parking) queue and
// back to where they can be handled: the seed's Replay, as a function over a
// transport's Connector.
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
// nobody could decode is exactly what ends up in a dead-letter queue.
//
// Rows of the patterns map (RP1-RP14), as built here:
//
//   - RP1 Run(ctx, connector, From, options...) (Result, error).
//   - RP2 From{Queue, Topic, RoutingKey, Limit, Deadline, Filter,
//     KeepAttempts} (Topic is the seed's Exchange; "" is the default
//     exchange), plus DryRun. Default key, decided: the queue a set-aside
//     queue holds messages for (SourceOf: orders for orders.dlq and
//     orders.parked), since a set-aside copy arrived under the key
//     {queue}.dlq and its original key is not kept; for another queue, with a
//     Topic, the key each message arrived with. A pass whose destination is
//     the queue it reads is refused before connecting, and one whose copies
//     come back to it stops (Failed) instead of looping.
//   - RP3 Result{Moved, Skipped, Reason} with String "moved 500, skipped 31
//     (limit)"; reasons Drained, Limit, Deadline, Cancelled, Failed.
//   - RP4 Filter func(messaging.Delivery) bool: Delivery.Error is the
//     set-aside reason, Payload the body, Headers the application headers.
//   - RP5 declined messages are held unacknowledged until the pass ends and
//     returned together by closing the poll stream (never one by one, which
//     would hand back the same message at the head of the queue).
//   - RP6, RP7, RP8 every copy is stamped HeaderReplayedFrom (the queue
//     read), HeaderReplayedAt (RFC 3339, UTC) and HeaderReplayCount (the
//     previous count, read in any integer width or as text, plus one,
//     written as a signed 32-bit integer as the family writes it),
//     unprefixed so they reach handlers.
//   - RP9 a .NET operator's x-acemq-replayed-* stamps are removed on consume
//     with every other x-acemq- header the envelope does not carry; nothing
//     here reads them.
//   - RP10 the copy starts again at attempt 1 with no x-acemq-error unless
//     KeepAttempts; every other envelope field is the original's
//     (messaging.Delivery.Redispatch: same id, type, first seen, headers).
//   - RP11 the queue is read with the transport's poll mode
//     (StreamConfig.Poll, basic.get), a message at a time, until
//     messaging.ErrQueueEmpty (Drained).
//   - RP12 the original is acknowledged only after Writer.Write returned,
//     which is after the broker confirmed and routed the copy: a crash in
//     between gives a duplicate, never a loss. Copies are published up to 64
//     at a time with their confirms awaited together (a round trip per batch,
//     not per message), and only the originals whose copies landed are
//     acknowledged.
//   - RP13 copies are mandatory: an unroutable one stops the pass with
//     Failed and an error matching messaging.ErrUnroutable (the library's
//     *messaging.PublishError, not the seed's PublishFailedError); that
//     original goes back to its queue.
//   - RP14 bytes in, bytes out, persistent; the transport's own Writer
//     publishes, so no serialization or interceptor runs.
//
// A pass that fails (a lost connection, a refused publish) returns what it
// holds to the queue when its stream closes; run it again to continue. Options.Each
// reports every message read and what became of it, and Monitor counts
// moved and declined messages and finished passes.
package replay
