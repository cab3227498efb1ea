// Package schedule delivers a message later, without a broker plugin: the
// seed's Delayed delivery, on a ladder of classic queues with a uniform time
// to live each.
//
//	scheduler, err := schedule.New(ctx, transport) // rabbitmq.New(...) or memory.New()
//	defer scheduler.Close()
//	err = scheduler.In(ctx, 4*time.Hour, messaging.Dispatch{Topic: "billing", RoutingKey: "invoice.due", Payload: invoice})
//	err = scheduler.At(ctx, renewal, messaging.Dispatch{Topic: "policies", RoutingKey: "policy.renew", Message: policy})
//
// A per-message time to live does not work for mixed delays: a classic queue
// expires messages only at its head, so a one-minute message behind a
// four-hour one waits four hours. Every message in a rung has the same
// delay, so its head is always the one due first. A message hops onto the
// largest rung that does not overshoot what is left; an expired one is
// dead-lettered to DueQueue, where the control consumer delivers it (less
// than a second left) or puts it on the next rung. A day is 24 hops, a minute
// one; delivery is accurate to about the smallest rung, a second.
//
// Rows of the patterns map (SC1-SC21), as built here:
//
//   - SC1 New(ctx, connector, options...) (*Scheduler, error) applies
//     Topology and starts the control consumer (streaming) before it
//     returns; Close stops it.
//   - SC2, SC3 In(ctx, delay, dispatch) is At(ctx, now+delay, dispatch);
//     the destination is dispatch.Topic and RoutingKey (a Dispatch rather
//     than the seed's exchange, key and value); an empty key is
//     ErrNoRoutingKey, "acemq: a scheduled message needs a routing key"; a
//     Message without a Payload is encoded once (Options.Encoder, JSON);
//     Scheduled() counts what At accepted.
//   - SC4, SC5, SC6, SC7 Rungs: acemq.schedule.1h, .10m, .1m, .10s, .1s
//     (RungName spells the delay with retrypolicy.DelayName), classic,
//     durable, exactly the three RungArguments, bound to the durable direct
//     Exchange under their own names; DueQueue classic, durable, no
//     arguments, bound under its own name.
//   - SC8 the largest rung not beyond what is left; when that rung reaches
//     no queue (deleted) a shorter one is tried, never a longer one
//     (Monitor.RungMissing).
//   - SC9 both hops, onto a rung and out to the destination, are mandatory
//     and confirmed (the batch writer); the control message is acknowledged
//     only after the hop landed.
//   - SC10 a due message that reaches no queue (nothing bound, or its
//     exchange missing) goes back through the 10 s rung, with no limit. At
//     for a moment less than a second away or past hands the message to
//     DueQueue and returns no error; the control consumer delivers it or
//     keeps it the same way.
//   - SC11 Scheduled(), Hops(), Delivered(); Delivered counts arrivals only
//     (Monitor.Undelivered for each failed try), so Hops climbing while
//     Delivered stands still is an unbound destination.
//   - SC12 a message no rung takes: At returns the error (matching
//     messaging.ErrUnroutable) and nothing hopped; in the control consumer
//     it is set aside on acemq.schedule.due.dlq with the reason
//     (messaging.Reject).
//   - SC13 Topology() is a topology.Plan: String prints it, Apply declares
//     it, Check compares it with a broker (warrenmq schedule topology).
//   - SC14 the names and argument tables are tested against the digest's.
//   - SC15 HeaderExchange, HeaderRoutingKey, HeaderDueAt (Unix ms, an
//     int64) and HeaderContentType, outside the reserved x-acemq- namespace.
//   - SC16 between rungs the content type is BytesContentType; delivered,
//     the one At was given (or the encoder's), else DefaultContentType.
//   - SC17 the delivery is a fresh envelope of type MessageType without the
//     four headers. Decided: it keeps the scheduled message's id and
//     correlation id (the seed's inferred behaviour gives a new id), so a
//     consumer can deduplicate; the caller's type and headers do not travel,
//     because the four headers are all the contract carries between rungs.
//   - SC18 less than a second left is delivered, not hopped.
//   - SC19 no delayed-message-exchange plugin is used.
//   - SC20 the control consumer reads bytes (no codec) at Prefetch 50;
//     a message without the headers, or with a due time that is not a
//     moment, is set aside (Fatal) with the digest's texts.
//   - SC21 the control consumer declares acemq.schedule.due.dlq and .parked
//     (DeadLetters), as the Go library does and the other four do not;
//     Topology leaves them out, as the shared contract does.
//
// An outage (the broker unreachable mid-hop, a connection it closed) or a
// shutdown leaves the control message unacknowledged for the broker to
// redeliver: nothing is dropped or set aside for it, and a hop that landed
// before it may be repeated (at least once). The control consumer opens its
// stream again 100 ms after losing it, and a hop refused because the writer's
// connection had closed since its last use (nothing sent) is made once more
// on a fresh connection. A publish the
// broker refuses for another reason is set aside on acemq.schedule.due.dlq
// with the reason.
package schedule
