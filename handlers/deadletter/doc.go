// Package deadletter is the settlement decorator: it makes sure nothing loops
// for ever. It wraps the outermost handler of a subscription (normally
// retry.New(...)) and, when a delivery cannot be handled, republishes its
// original bytes and properties (mandatory, confirmed, through the default
// exchange) to a queue beside the source queue, with the reason in the
// x-acemq-error header, and only then lets the runtime acknowledge it:
//
//   - an undecodable delivery (Delivery.Undecodable set, not
//     messaging.ErrFiltered) goes to {queue}.parked with the reason
//     "could not be decoded: <err>", before the inner handler runs;
//   - a delivery whose handling still panics after the inner handler's retry
//     budget (or at once, for an error marked messaging.Fatal) goes to
//     {queue}.dlq. In a batch the poison message is isolated first: after a
//     batch fails, each of its messages is handled alone and only the ones that
//     still fail are set aside, so healthy neighbours are not dead-lettered.
//
// Only a failure that is one message's own is set aside. A failure that is a
// dependency's (messaging.IsOutage: a database or broker that does not
// answer, a transaction that cannot begin, a commit it did not answer, a refused or reset
// connection, a timeout) is never dead-lettered: the decorator re-panics, so
// nothing is acknowledged, and reports the deliveries to Monitor.Settled as
// held_for_outage. An inner handlers/retry holds such a batch in the process
// until the dependency answers, without spending its budget. The isolation
// above applies the same rule: when every message of a batch of two or more
// fails alone, and all the same way (the same panic type and text), the
// failure is taken to be a dependency's and none is set aside; mark a failure
// that is each message's own with messaging.Fatal so it is dead-lettered.
//
// A set-aside copy is always publishable. The reason is cut to MaxReason
// bytes (4 KiB, on a rune boundary, with a marker saying how long it was). An
// id, correlation id or type longer than an AMQP property travels whole in its
// x-acemq- header (the copy is Verbatim). When the wire still refuses the copy
// (messaging.ErrWireLimit, for example foreign headers near the frame limit),
// a reduced copy is set aside instead, in this order: without its application
// headers; also without its causation, origin, claim and route headers; also
// with its id, correlation id and type cut to 255 bytes. The payload is always
// kept whole, and what was left out is appended to the reason in
// x-acemq-error.
//
// If a republish fails, that delivery is not acknowledged: the decorator goes
// on with the rest of the batch and then panics with an *UnsettledError that
// names the deliveries whose settlement failed (every other one was handled
// or set aside). The streaming runtime returns each of them to its queue
// alone and acknowledges the rest, so one failed republish redelivers one
// message; at least once, never at most once. A set-aside publish ignores
// the handler's cancellation and has its own bound
// (Options.PublishTimeout, 30 s by default), so a message given up on during
// shutdown survives. A failure that happens while the handler's context is
// cancelled (shutdown) is not the message's fault: it is re-raised, not set
// aside. When a batch ends early that way, or with an outage, after some of
// its deliveries were settled for good (a copy set aside and confirmed, or a
// message completed when run alone), the decorator panics with a
// *PartlySettledError that lists them: the streaming runtime acknowledges
// those, so none is set aside or handled a second time, and the broker
// redelivers the rest.
//
// The handler takes each message's envelope from the message when it is a
// messaging.Delivery, else from the context (messaging.DeliveriesFrom, which
// the streaming runtime sets beside the decoded values), so no subscription
// flag is needed. It hands the inner handler Delivery.Message values, or the
// deliveries themselves with Options.FullDelivery(true). It puts a
// messaging.Settler in the context it hands on, so any inner decorator or
// handler settles single messages with the root vocabulary
// (messaging.Accept, Reject, Park, Retry, InProgress, on the same
// republish-then-acknowledge rule) and reads what was decided with
// messaging.DecisionOf. A decode error marked messaging.Retryable goes
// through Retry instead of the parked queue; Options.RefuseRetry parks a
// Retry or InProgress with the reason instead.
//
// The retry budget is one retrypolicy.Policy value (Options.Policy), the same
// given to retry.Options.Policy; Retry without one gives up after
// retrypolicy.Default's five attempts. The streaming runtime wraps every
// worker in a decorator of this package, configured with these options by
// streaming.SubscriptionOptions.Settlement: that is where a service states
// its settlement. One of the user's own inside it takes over for each batch
// it handles, so nothing is set aside twice.
//
// The connector must be a transport (raw or serialization's; not the outbox):
// the decorator publishes through a batch.Writer over it, which connects
// lazily and redials after a lost connection by the one rule of package
// batch; it also declares each retry rung on that writer's connection, so a
// rung exists on the node its copy is published to. Several decorators share
// one connection with Options.Writer. Close releases the decorator's own
// writer; the connector stays its owner's.
package deadletter
