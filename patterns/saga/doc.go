// Package saga coordinates work that spans services where one database
// transaction is not available: steps run in order, and when one fails the
// steps that completed are undone in reverse order, the order the world was
// changed in.
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
// Nothing in a Saga touches a broker: it is in-process coordination, and what
// matches the other AceMQ libraries is the behaviour, not a wire format. To
// run a saga per message use Handler(s, store): it claims each message's key
// in an idempotency store first, so a redelivered message whose saga ran (its
// acknowledgement lost with its connection) is a duplicate and its saga, its
// compensations included, does not run again; a plain handler calling Run
// would run it again.
//
// New refuses (ErrInvalidSaga) a saga without a name or steps, a step without
// a name or a Do, and two steps of one name. Run returns a Result, never an
// error. Steps run in order; on a failure the completed ones are undone in
// reverse; a nil Undo is skipped (Result.Skipped); a failing Undo does not
// stop the others and is listed in Result.Unresolved. Compensations get Run's
// ctx: if the failure you expect is a cancellation, pass
// context.WithoutCancel(ctx) and bound the steps yourself. A ctx already done
// when a step is due stops the saga at that boundary (Failed names the step
// not started, Err wraps ctx.Err()) and compensates; a step already running is
// not interrupted by the saga, only by its own use of ctx. A panicking Do is a
// failed step and the earlier ones are compensated; a panicking Undo is
// unresolved. Neither panic leaves Run.
//
// Write Undo first: a completed step without one is skipped, which is right
// for a step that only read something and a mistake for one that changed
// something, and nothing here can tell the two apart. Unresolved lists real
// effects that happened, were meant to be undone, and were not: nothing else
// knows about them and no retry resolves them; a person has to. Monitor
// counts runs per outcome and failed undos per step.
package saga
