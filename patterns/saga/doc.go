// Package saga coordinates work that spans services where one database
// transaction is not available, the seed's Sagas pattern: steps run in
// order, and when one fails the steps that completed are undone in reverse
// order, the order the world was changed in.
//
//	placeOrder, err := saga.New("place-order", []saga.Step[*Order]{
//		{Name: "reserve-stock", Do: reserveStock, Undo: releaseStock},
//		{Name: "take-payment", Do: takePayment, Undo: refund},
//		{Name: "confirm", Do: confirm},
//	})
//	result := placeOrder.Run(ctx, order)
//	if result.HasUnresolved() {
//		alert("could not undo: %v", result.Unresolved)
//	}
//
// Nothing here touches a broker: it is in-process coordination, and what
// matches the other AceMQ libraries is the behaviour, not a wire format. To
// run a saga per message, call Run from a handler and settle the message on
// its Result.
//
// Rows of the patterns map (SG1-SG8), as built here:
//
//   - SG1 New[T](name, []Step[T], options...) (*Saga[T], error); Step{Name,
//     Do, Undo}. New refuses (ErrInvalidSaga) a saga without a name or
//     steps, a step without a name or a Do, and two steps of one name.
//   - SG2 Run(ctx, v) returns a Result, never an error: Completed, Failed
//     and Err, Compensated, Skipped, Unresolved, and Outcome() (Completed,
//     Compensated, Unresolved).
//   - SG3 steps in order; on a failure the completed ones are undone in
//     reverse.
//   - SG4 a nil Undo is skipped (listed in Result.Skipped).
//   - SG5 HasUnresolved and Unresolved ([]UndoFailure{Step, Err}); a failing
//     Undo does not stop the others.
//   - SG6 compensations get Run's ctx; if the failure you expect is a
//     cancellation, pass context.WithoutCancel(ctx) and bound the steps
//     yourself. Beyond the seed, a ctx already done when a step is due stops
//     the saga at that boundary (Failed names the step not started, Err wraps
//     ctx.Err()) and compensates; a step already running is not interrupted
//     by the saga, only by its own use of ctx.
//   - SG7 a panicking Do is a failed step and the earlier ones are
//     compensated; a panicking Undo is unresolved. Neither panic leaves Run.
//   - SG8 no broker, no wire format.
//
// Write Undo first: a completed step without one is skipped, which is right
// for a step that only read something and a mistake for one that changed
// something, and nothing here can tell the two apart. Unresolved lists real
// effects that happened, were meant to be undone, and were not: nothing else
// knows about them and no retry resolves them; a person has to. Monitor
// counts runs per outcome and failed undos per step.
package saga
