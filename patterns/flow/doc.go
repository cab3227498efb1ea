// Package flow is the seed's flows in which one message causes the next:
// Then (a handler that returns the next message), routing slips (the message
// carries its itinerary) and pipelines (a declared chain of typed steps, each
// on a queue of its own).
//
//	// Then: the next message, published when the work is done
//	invoice := flow.Then(writer, flow.Address{Topic: "billing", RoutingKey: "invoice.due"},
//		func(ctx context.Context, d messaging.Delivery, o Order) (Invoice, bool, error) {
//			return Invoice{Order: o.ID}, true, nil
//		})
//
//	// A pipeline: topology declared, steps typed and running
//	p, err := flow.NewPipeline[Order](ctx, transport, "fulfilment",
//		flow.Step("validate", validate),
//		flow.Step("reserve", reserve, flow.StepOptions.Retry(retrypolicy.Exponential(4, time.Second, time.Minute))),
//		flow.Step("dispatch", dispatch),
//	)
//	runID, err := p.Send(ctx, order)
//
// Every hop is one step handler's: the step runs, and what it returns is
// published straight to the broker as the next message: mandatory and
// confirmed whatever the writer, with the input's correlation id, the
// input's id as its causation id and the input's FirstSeen (so the last
// message's age is the run's), through messaging.PublishOnce keyed by the
// input's queue, id and the hop's address, so a batch run again by retry (or
// isolated by the settlement decorator) does not publish a hop twice. The
// hops of a batch go out in one write, so a batch waits for one
// confirmation, not one per message; when that write fails as a whole for a
// reason other than an outage (a wire limit), each hop goes alone. The
// hop's id is derived from the input's id and the hop, so a hop published
// again after a redelivery carries the same id, for an idempotency guard
// downstream. The input is acknowledged with its batch only once its hop
// was confirmed and routed. Settlement is the root vocabulary's: a step
// error is messaging.Retry (the retry policy's budget), or messaging.Reject
// when marked messaging.Fatal; an outage (messaging.IsOutage) panics marked
// as one, so the batch is held and no attempt spent; a panic in a step
// function is its failure like an error. Application headers are not carried
// to the next message (the slip header excepted).
//
// Rows of the patterns map, as built here:
//
//   - TH1 Then[In, Out](writer, Address, fn(ctx, Delivery, In) (Out, bool,
//     error), options...) is a messaging.Handler. The input is the value
//     the stack decoded (serialization) or, on a raw stack, the payload
//     decoded with Options.Deserializer (JSON); the output is encoded with
//     Options.Serializer (JSON) here, so a serialization writer passes it
//     through. A body that does not decode is parked (Fatal).
//   - TH2 correlation carried, causation = the input's id.
//   - TH3 the input is accepted only once the hop is confirmed; a failed
//     publish is messaging.Retry with "acemq: the work for message %s is
//     done but the next message did not go out: %w" (an outage: held; a
//     next message over a wire limit, messaging.ErrWireLimit: rejected,
//     since it will never fit).
//   - TH4, TH5 the hop is always Mandatory and confirmed (every Writer of
//     this library confirms); the writer is not changed.
//   - TH6 false publishes nothing and accepts; an error is Reject when
//     Fatal, else Retry.
//   - TH7 Options.InPipeline, Options.AtStep; a run that ends at a named
//     step is reported to Monitor.RunFinished and to the RunObserver the
//     context carries (WithRunObserver), the seam a tracing adapter uses for
//     the pipeline.run_finished event, and to Options.RunObserver (how a
//     pipeline's steps get one); an unnamed step reports nothing.
//     Then reports ended_early.
//   - TH8 FollowSlip and a pipeline's last step report completed, the step
//     name taken from the slip's stop (unless AtStep); RunFinished.Age is
//     the time since the last message's FirstSeen, which hops carry on, so
//     it is the whole run.
//   - RS1 NewRoutingSlip().Then(exchange, routingKey, name) *Slip.
//   - RS2 Start(ctx, writer, slip, dispatch) publishes, mandatory, to the
//     first stop; an empty slip is ErrNoSteps, "acemq: this routing slip has
//     no steps in it".
//   - RS3 FollowSlip[T](writer, fn(ctx, Delivery, T) (T, error), options...).
//   - RS4 the JSON form, header HeaderRoutingSlip = "acemq-routing-slip":
//     {"steps":[{exchange,routingKey,name}],"done":[...,completedAt]}, done,
//     name and completedAt omitted when empty, completedAt RFC 3339 UTC in
//     whole seconds (2026-01-01T10:11:12Z), no run id.
//     ParseSlip is its decoder (fuzzed); anything else is ErrUnreadableSlip.
//   - RS5 the declared form is Delivery.Route, RoutePosition and RouteID
//     (x-acemq-route, -position, -id, encoded by the transports); ReadSlip
//     reads the JSON header first, then those. A position past the end is a
//     finished run: the message is accepted and the step does not run.
//   - RS6 a slip keeps the form it arrived in (Slip.Form); Start writes the
//     form the slip is in, JSON unless it came from Route.Start or AsSteps.
//   - RS7 NewRoute(name, steps...), Route.QueueFor(step) = {name}.{step}.
//   - RS8 Options.AlongRoute(route): a declared route's next stop is the
//     route's exchange keyed on the next step's name, the position advanced
//     and the run id carried; it also names the pipeline.
//   - RS9 a declared route without AlongRoute is rejected, fatal, with the
//     seed's text (which names patterns.AlongRoute, as every AceMQ library
//     words it; here it is flow.Options.AlongRoute).
//   - RS10 Route.Start(): position 0, fresh run id.
//   - RS11 Slip.AsSteps(route) (a run id made when there is none),
//     AsJSON, Form, RunID; the steps form writes every name (done and
//     remaining) with position = len(done).
//   - RS12 no slip: Reject(Fatal("acemq: message %s has no routing slip, so
//     there is nowhere to send it next")); an unreadable slip or one that is
//     not text: Reject(Fatal), the reason ErrUnreadableSlip's "acemq: cannot
//     read the routing slip: ...".
//   - RS13 Slip.Advance returns a new slip with the first stop moved to done
//     with completedAt, and leaves its own as it was; none left: accepted,
//     reported completed.
//   - RS14 the next hop is mandatory, to the next stop in the same form,
//     correlation carried, causation = the input's id; a failure is Retry
//     with "acemq: %s is done for message %s but the next step did not go
//     out: %w".
//   - RS15 the cost (no single place knows the route) is in
//     doc/patterns-flow.md.
//   - PL1 NewPipeline[T](ctx, transport, name, parts...) returns when the
//     topology is declared and every step's consumer opened its stream
//     (streaming.Consumer.Started). T is what Send takes; Options are given
//     among the steps (a PipelinePart).
//   - PL2 Step[In, Out](name, fn(ctx, Delivery, In) (Out, bool, error),
//     StepOptions...).
//   - PL3 StepOptions.Consumers(n): n subscriptions on {pipeline}.{step},
//     each with its own connection and prefetch.
//   - PL4 StepOptions.Retry(policy) (default retrypolicy.Default, the
//     library's five attempts): the subscription's settlement retries a
//     failed step through it (rungs declared at start for broker waits) and
//     handlers/retry, with the same value, holds an outage in the process.
//   - PL5 StepOptions.DescribedAs(text).
//   - PL6 StepOptions.Subscription(streaming.SubscriptionOption...)
//     (BatchCapacity, BufferCapacity, shutdown); the pipeline's own options
//     (queue, workers, full deliveries, topology, retry policy) win.
//   - PL7 Close stops the steps' consumers and closes the writers; Send
//     after Close is messaging.ErrClosed.
//   - PL8 Send(ctx, T) and SendWith(ctx, T, envelope) start a run:
//     Route.Start (steps form, fresh run id) published to exchange = the
//     pipeline, key = the first step; the run id is returned.
//   - PL9 a step returning false accepts the input, reported ended_early.
//   - PL10, PL11, PL12 the topology plan (Pipeline.Topology, a
//     topology.Plan applied through the transport's messaging.Declarer): a
//     durable direct exchange named after the pipeline, each
//     {pipeline}.{step} queue durable, so quorum, with acemq.dlx dead
//     letters, its .dlq and .parked, bound on the step name. Redeclaring is
//     idempotent, so every service that runs a step agrees.
//   - PL13 the route headers through Dispatch.Route, RoutePosition and
//     RouteID (the transports' envelope).
//   - PL14 the types are checked when the pipeline is built, before anything
//     is declared, with the seed's texts: "acemq: pipeline %q step %q
//     produces %s but the next step %q consumes %s" and "acemq: pipeline %q
//     is sent %s but its first step %q consumes %s" (Send is typed, so the
//     second is a build error too). Types print as reflect does
//     (package.Type). Errors match ErrInvalidPipeline.
//   - PL15 the validation texts of the digest, verbatim; besides them, a
//     step retry policy with invalid inputs (retrypolicy.Policy.Err) is
//     refused.
//   - PL16 Describe() returns "pipeline {name} with {n} steps: validate |
//     reserve (desc) | dispatch".
//   - PL17 a step without a slip assumes its own position; an error is
//     Reject when Fatal, else Retry; the last step accepts, completed,
//     decided by the route.
//   - PL18 the next hop: mandatory, to the slip's next stop, correlation
//     carried, causation = the input's id, route advanced; a failure is
//     Retry with "acemq: pipeline %s step %s finished with message %s but
//     the next message did not go out: %w".
//   - PL19 a start failure (Started's error) closes every consumer and
//     writer already started.
//   - PL20 a Go step can be one hop of another library's pipeline: FollowSlip
//     with AlongRoute(route) reads and writes the declared route headers
//     (Pipeline.Route gives the route of a Go pipeline).
//
// Differences on purpose: the seed's handler receives a typed Message[T];
// here it receives the messaging.Delivery (the envelope) and the decoded T.
// Nothing here logs (the seed's rule); the pipeline's consumer and retry
// decorators log through Options.Logger. The WithoutConfirms "hop channel"
// does not exist because every writer of this library confirms.
package flow
