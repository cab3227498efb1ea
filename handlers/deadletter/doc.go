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
// If a republish fails the decorator panics, so the runtime does not
// acknowledge and the broker redelivers: at least once, never at most once. A
// set-aside publish ignores the handler's cancellation and has its own bound
// (Options.PublishTimeout, 30 s by default), so a message given up on during
// shutdown survives. A failure that happens while the handler's context is
// cancelled (shutdown) is not the message's fault: it is re-raised, not set
// aside.
//
// The handler expects messaging.Delivery values: use it with
// streaming.SubscriptionOptions.FullDeliveryToHandler(true). It hands the
// inner handler Delivery.Message values, or the deliveries themselves with
// Options.FullDelivery(true); with full deliveries the inner handler can settle
// single messages through the context it received with Reject, Park, Retry and
// InProgress, on the same republish-then-acknowledge rule.
//
// The connector must be the raw transport (not the outbox); the decorator
// opens one connection from it lazily, redials after errors, and leaves
// closing it to the connector's owner.
package deadletter
