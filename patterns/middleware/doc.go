// Package middleware holds the seed's handler wrappers that are not a pattern
// of their own: Timeout, Logging and Recovery, each a messaging.Middleware
// composed with messaging.Chain, first named outermost, in the seed's order:
//
//	worker := messaging.Chain(
//		middleware.Logging(log.Printf),             // records what the others decided
//		middleware.Recovery(),                      // a panic the retries gave up on: dead-lettered
//		middleware.Timeout(10*time.Second),         // past the deadline: retried
//		idempotency.Middleware(store),
//		retry.Middleware(retry.Options.Policy(budget)),
//	)(handle)
//
// Rows of the patterns map (CH1-CH6), as built here:
//
//   - CH1 messaging.Chain(middlewares...)(handler) is the seed's
//     Chain(handler, middlewares...), first named outermost; no second
//     Chain is written here.
//   - CH2 Logging(printf): one line per delivery, "acemq <id> type=<t>
//     attempt=<n> took=<d> <outcome>[: reason]", the outcome read through
//     messaging.DecisionOf after the handler returned (accepted when nothing
//     was decided), "panicked" when the settlement outside decides. A retry's
//     line carries no reason: the settlement records none for it.
//   - CH3 Timeout(d): the handler's context ends at d; a handler that
//     returns or panics after it has each undecided delivery retried with
//     "acemq: handling message %s did not finish within %s: %w", wrapping
//     ErrHandlerTimeout (not context.DeadlineExceeded, which reads as an
//     outage and would spend no attempt). Difference: settlement is eager, so
//     a delivery the handler settled through the context before the deadline
//     passed keeps that settlement (S6d of the map is not built).
//   - CH4 is idempotency.New (patterns/idempotency); CH6 is ordering.New
//     (patterns/ordering). They compose with these through messaging.Chain.
//   - CH5 Recovery(): a panic is messaging.Reject with messaging.Fatalf("acemq:
//     the handler panicked on message %s: %v"). Differences: a panic marked
//     messaging.Outage goes on outwards (no attempt spent, never
//     dead-lettered for a dependency), and so does a panic in a batch of
//     several messages, which the streaming runtime then runs one message at
//     a time, through Recovery again.
//
// Monitor (Options.Monitor) counts what Timeout retried and Recovery
// rejected.
package middleware
