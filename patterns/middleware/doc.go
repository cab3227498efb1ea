// Package middleware holds the handler wrappers that are not a pattern of
// their own: Timeout, Logging and Recovery, each a messaging.Middleware
// composed with messaging.Chain, first named outermost:
//
//	worker := messaging.Chain(
//		middleware.Logging(nil),                    // records what the others decided
//		middleware.Recovery(),                      // a panic the retries gave up on: dead-lettered
//		middleware.Timeout(10*time.Second),         // past the deadline: retried
//		idempotency.Middleware(store),
//		retry.Middleware(retry.Options.Policy(budget)),
//	)(handle)
//
// Logging(nil) writes one slog line per delivery, the constant message
// "Delivery handled" with queue, message_id, message_type, attempt, took,
// outcome and reason as attributes (Options.Logger, default slog.Default());
// the outcome is read through messaging.DecisionOf after the handler returned
// (accepted when nothing was decided), "panicked" when the settlement outside
// decides. A retry's line carries no reason: the settlement records none for
// it. Logging(printf) hands printf the AceMQ family's text line instead,
// "acemq <id> type=<t> attempt=<n> took=<d> <outcome>[: reason]".
//
// Timeout(d) ends the handler's context at d; a handler that returns or
// panics after it has each undecided delivery retried with "acemq: handling
// message <id> did not finish within <d>: ...", wrapping ErrHandlerTimeout
// (not context.DeadlineExceeded, which reads as an outage and would spend no
// attempt). A delivery the handler settled through the context before the
// deadline keeps that settlement.
//
// Recovery() turns a panic into messaging.Reject with messaging.Fatalf("acemq:
// the handler panicked on message <id>: <value>"). A panic marked
// messaging.Outage goes on outwards (no attempt spent, never dead-lettered for
// a dependency), and so does a panic in a batch of several messages, which the
// streaming runtime then runs one message at a time, through Recovery again.
//
// idempotency.Middleware and ordering.Middleware compose with these through
// messaging.Chain.
//
// Monitor (Options.Monitor) counts what Timeout retried and Recovery
// rejected.
package middleware
