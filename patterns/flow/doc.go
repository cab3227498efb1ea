// Package flow chains messages: a step handles one message and what it
// returns is published as the next. Three shapes share one step handler:
//
//   - Then: a handler whose result goes to a fixed address, for a step that
//     always leads to the same next one;
//   - FollowSlip: the message carries its itinerary (a routing slip), for
//     messages of one kind that take different routes;
//   - NewPipeline: a declared chain of typed steps, each on a queue of its
//     own, with its topology declared for you.
//
// A Then step and a pipeline:
//
//	invoice := flow.Then(writer, flow.Address{Topic: "billing", RoutingKey: "invoice.due"},
//		func(ctx context.Context, d messaging.Delivery, o Order) (Invoice, bool, error) {
//			return Invoice{Order: o.ID}, true, nil // false: nothing more to do, the run ends here
//		})
//
//	p, err := flow.NewPipeline[Order](ctx, transport, "fulfilment",
//		flow.Step("validate", validate),
//		flow.Step("reserve", reserve, flow.StepOptions.Retry(retrypolicy.Exponential(4, time.Second, time.Minute))),
//		flow.Step("dispatch", dispatch),
//	)
//	defer p.Close()
//	runID, err := p.Send(ctx, order)
//	fmt.Println(p.Describe()) // pipeline fulfilment with 3 steps: validate | reserve | dispatch
//
// Then and FollowSlip return a messaging.Handler; they settle single
// messages, so they run under a settlement decorator (the streaming runtime
// puts one around every worker). A step function receives the delivery (its
// envelope) and the decoded input: the value the stack decoded
// (serialization) or, on a raw transport, the payload decoded with
// Options.Deserializer (JSON by default). Its output is encoded with
// Options.Serializer (JSON), so a serialization writer passes it through.
//
// # What every hop guarantees
//
// The next message (the hop) is:
//
//   - mandatory and confirmed, whatever writer you pass (the writer is not
//     changed): a hop that reaches no queue is an error, never a silent drop;
//   - stamped with the input's correlation id, the input's id as its
//     causation id and the input's FirstSeen, so the last message's age is
//     the whole run's;
//   - published once per batch: a batch run again by handlers/retry, or
//     isolated one message at a time by the settlement decorator, does not
//     publish a hop twice (messaging.PublishOnce, keyed by the input's queue,
//     id and the hop's address);
//   - given an id derived from the input's id and the hop, so a hop published
//     again after a redelivery carries the same id and an idempotency guard
//     downstream drops it;
//   - written with the other hops of its batch in one write (one confirmation
//     per batch); when that write fails as a whole for a reason other than
//     an outage (a wire limit), each hop is written alone.
//
// The input is acknowledged with its batch only once its hop was confirmed
// and routed. Application headers are not carried to the next message; only
// the routing slip travels.
//
// # How the input is settled
//
//   - the step returns a value and true: accepted once the hop landed;
//   - it returns false (Then, pipeline steps): accepted, nothing published,
//     the run ended early;
//   - it returns an error: messaging.Retry, so the retry policy's budget
//     applies and the input is dead-lettered when it runs out; an error
//     marked messaging.Fatal is messaging.Reject, dead-lettered to
//     {queue}.dlq at once; a panic in the step is treated as an error;
//   - it fails with an outage (messaging.IsOutage): the batch is held, no
//     attempt spent;
//   - the work is done but the hop does not go out: messaging.Retry, with
//     "acemq: the work for message <id> is done but the next message did not
//     go out: <cause>" (for a pipeline: "acemq: pipeline <p> step <s>
//     finished with message <id> but the next message did not go out: ...",
//     for a slip: "acemq: <step> is done for message <id> but the next step
//     did not go out: ..."). A hop over a wire limit (messaging.ErrWireLimit)
//     is rejected instead: it will never fit;
//   - a body that does not decode is parked (Fatal).
//
// # Routing slips
//
//	slip := flow.NewRoutingSlip().
//		Then("orders", "order.validate", "validate").
//		Then("orders", "order.charge", "charge")
//	err := flow.Start(ctx, writer, slip, messaging.Dispatch{Message: order})
//
//	charge := flow.FollowSlip(writer, func(ctx context.Context, d messaging.Delivery, o Order) (Order, error) {
//		return o, chargeCard(ctx, o)
//	})
//
// Start publishes to the first stop (ErrNoSteps for an empty slip). A
// FollowSlip step advances the slip (Slip.Advance returns a new slip with
// the first stop moved to the done list, stamped, and leaves its own as it
// was) and publishes to the next stop, in the form the slip arrived in; with
// no stop left the input is accepted and the run completed. No slip at all
// is rejected (Fatal, "acemq: message <id> has no routing slip, so there is
// nowhere to send it next"); an unreadable one is rejected with
// ErrUnreadableSlip ("acemq: cannot read the routing slip: ...").
//
// A slip travels in one of the two forms of the AceMQ family, and a Go step
// reads both (ReadSlip reads the JSON header first):
//
//   - the JSON form, header HeaderRoutingSlip ("acemq-routing-slip"):
//     {"steps":[{"exchange":..,"routingKey":..,"name":..}],"done":[...]},
//     each done stop with its completedAt in RFC 3339 UTC, whole seconds
//     (2026-01-01T10:11:12Z); empty fields are left out. ParseSlip decodes it.
//   - the declared form of a Route, the Java library's: x-acemq-route (the
//     step names), x-acemq-route-position and x-acemq-route-id (the run id),
//     Delivery.Route, RoutePosition and RouteID on the envelope. The next stop
//     is the route's exchange keyed on the next step's name. A position past
//     the end is a finished run: the input is accepted and the step does not
//     run.
//
// Reading a declared route needs Options.AlongRoute(route); without it such
// a message is rejected (Fatal) with the family's text, which names
// AlongRoute. NewRoute(name, steps...) is a route; Route.Start begins a run
// (position 0, a fresh run id); Slip.AsSteps(route) and AsJSON convert a
// slip; Route.QueueFor(step) is {name}.{step}. Through AlongRoute, a Go
// FollowSlip can be one hop of a pipeline another AceMQ library runs.
//
// # Pipelines
//
// NewPipeline returns once the topology is declared and every step's
// consumer opened its stream (streaming.Consumer.Started); a start failure
// closes everything it started. The topology is the AceMQ family's, name for
// name, declared through the transport's messaging.Declarer as a
// topology.Plan (Pipeline.Topology prints it or checks it against a broker):
//
//   - exchange {pipeline}, durable, direct;
//   - a queue {pipeline}.{step} per step, durable (so quorum), dead-lettering
//     through acemq.dlx to {pipeline}.{step}.dlq, with its .parked;
//   - each queue bound on its step's name.
//
// Declaring is idempotent, so every service that runs a step agrees. Send and
// SendWith (an envelope of your own: id, headers, ...) start a run in the
// declared form, to the first step, and return the run id; after Close they
// fail with messaging.ErrClosed. A step with no slip on its input assumes its
// own position. The last step accepts its input and reports the run
// completed.
//
// Types are checked when the pipeline is built, before anything is declared:
// a step whose input is not the previous step's output fails with
// "acemq: pipeline <p> step <s> produces <T> but the next step <n> consumes
// <U>", and so does a first step that does not take what Send is given. Every
// build error (also a step retry policy that is invalid) matches
// ErrInvalidPipeline.
//
// # Options
//
// Options (for Then, FollowSlip and NewPipeline, the last given among its
// steps): InPipeline and AtStep name the handler for the Monitor and for a
// finished run; AlongRoute (which also names the pipeline); MessageType, the
// type Then writes on the next message (default none, which the wire
// contract reads as the routing key); Serializer and Deserializer (JSON);
// Logger (the pipeline's consumer and retry log through it; the step
// handlers themselves log nothing); Monitor (NopMonitor); RunObserver.
// StepOptions: Consumers(n) subscriptions per step, each with its own
// connection and prefetch (default 1); Retry(policy), applied by the
// subscription's settlement and by handlers/retry alike (default
// retrypolicy.Default, five attempts); DescribedAs(text) for Describe;
// Subscription(...) for the subscription's capacities and shutdown, where the
// pipeline's own settings (queue, workers, topology, retry) win.
//
// A run that ends at a named step, completed or ended early, is reported to
// Monitor.RunFinished, to Options.RunObserver and to the RunObserver the
// context carries (WithRunObserver: how monitoring/otel records it);
// RunFinished.Age is the time since the last message's FirstSeen, which is
// the whole run.
//
// The wire contract these follow (the x-acemq- headers, acemq.dlx, the
// {queue}.dlq and {queue}.parked queues) is the AceMQ family's, described in
// doc/contracts.md; doc/patterns-flow.md has the whole story.
package flow
