// Package schedule delivers a message later, without a broker plugin, on a
// ladder of classic queues that each hold messages for one fixed time.
//
//	scheduler, err := schedule.New(ctx, transport) // rabbitmq.New(...) or memory.New()
//	defer scheduler.Close()
//	err = scheduler.In(ctx, 4*time.Hour, messaging.Dispatch{Topic: "billing", RoutingKey: "invoice.due", Payload: invoice})
//	err = scheduler.At(ctx, renewal, messaging.Dispatch{Topic: "policies", RoutingKey: "policy.renew", Message: policy})
//
// # How it works
//
// A per-message time to live does not work for mixed delays: a classic
// queue expires messages only at its head, so a one-minute message behind a
// four-hour one waits four hours. Every message in a rung has the same
// delay, so its head is always the one due first. A message hops onto the
// largest rung that does not overshoot what is left; when it expires it is
// dead-lettered to DueQueue, where the scheduler's control consumer delivers
// it (less than a second left) or puts it on the next rung. A day is 24
// hops, a minute one; delivery is accurate to about the smallest rung, a
// second. A moment less than a second away, or already past, goes straight
// to DueQueue and is delivered from there.
//
// New(ctx, connector, options...) declares the topology (Topology) and
// starts the control consumer before it returns; Close stops it. At(ctx,
// due, dispatch) schedules dispatch for due, In(ctx, delay, dispatch) for
// now+delay; both are safe for concurrent use. The destination is
// dispatch.Topic and RoutingKey; an empty RoutingKey is ErrNoRoutingKey
// ("acemq: a scheduled message needs a routing key"). A Message without a
// Payload is encoded once, by At (Options.Encoder, JSON by default); the
// scheduler moves bytes after that.
//
// # What it guarantees
//
//   - Both hops, onto a rung and out to the destination, are mandatory and
//     confirmed; the control message is acknowledged only after its hop
//     landed. An outage (the broker unreachable mid-hop, a connection it
//     closed) or a shutdown leaves it unacknowledged for the broker to
//     redeliver: nothing is dropped or set aside for it, and a hop that
//     landed before may be repeated (at least once). The control consumer
//     opens its stream again 100 ms after losing it, and a hop refused
//     because the writer's connection had closed since its last use
//     (nothing was sent) is made once more on a fresh connection.
//   - A due message that reaches no queue (nothing bound to its destination
//     yet, or its exchange missing) goes back through the 10 s rung and is
//     tried again, with no limit: Monitor.Undelivered hears each try, so Hops
//     climbing while Delivered stands still is an unbound destination.
//   - When the rung it needs reaches no queue (someone deleted it), a
//     shorter rung is tried, never a longer one (Monitor.RungMissing). A
//     message no rung takes fails At with an error matching
//     messaging.ErrUnroutable, nothing hopped; in the control consumer it is
//     set aside on acemq.schedule.due.dlq with the reason (messaging.Reject),
//     as is a message without the scheduling headers, one whose due time is
//     not a moment, and a hop the broker refuses for another reason.
//   - The delivered message keeps the id and correlation id of the message
//     you scheduled, so a consumer can deduplicate. Its type is MessageType
//     and its content type the one At was given (or the encoder's, else
//     DefaultContentType); the scheduled message's own type and headers do
//     not travel, because the four scheduling headers are all the contract
//     carries between rungs.
//
// Scheduled, Hops and Delivered count what At accepted, the hops made and
// the messages that reached their destination.
//
// # Wire contract
//
// The topology and headers are a contract every AceMQ library declares
// alike, byte for byte, so schedulers in several languages share one ladder:
//
//   - the durable direct exchange Exchange (acemq.schedule);
//   - the rungs acemq.schedule.1h, .10m, .1m, .10s and .1s (Rungs, RungName),
//     classic, durable, with exactly the three RungArguments (x-message-ttl,
//     x-dead-letter-exchange acemq.schedule, x-dead-letter-routing-key
//     acemq.schedule.due), each bound to the exchange under its own name;
//   - DueQueue (acemq.schedule.due), classic, durable, without arguments,
//     bound under its own name;
//   - between rungs, the headers HeaderExchange, HeaderRoutingKey,
//     HeaderDueAt (Unix milliseconds, an int64) and HeaderContentType, named
//     x-schedule-*, outside the reserved x-acemq- namespace, and the content
//     type BytesContentType; the type is MessageType.
//
// Topology returns it as a topology.Plan: String prints it, Apply declares
// it, Check compares it with a broker (warrenmq schedule topology -check).
// The control consumer reads bytes (no codec) at Prefetch 50, and also
// declares acemq.schedule.due.dlq and acemq.schedule.due.parked for what it
// sets aside, which Topology, the shared contract, leaves out. The envelope
// headers and the rest of the AceMQ family's contract are in
// doc/contracts.md; doc/patterns-delayed.md has the whole story.
//
// # Options
//
// Encoder (encoding/json, application/json), Logger (slog.Default()) and
// Monitor (NopMonitor).
package schedule
