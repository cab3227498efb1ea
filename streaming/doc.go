// Package streaming is the consumer runtime: it opens one stream per
// subscription, reads deliveries into a local buffer, gathers them into
// opportunistic batches (take what is buffered, up to the batch capacity, never
// wait to fill), hands each batch to a worker's messaging.Handler and
// acknowledges the batch only after Handle returns.
//
// Acknowledgements are multiple-acks that cover many batches: a worker holds
// what it handled while more is buffered, up to half the prefetch, and when
// the buffer runs dry it waits up to a millisecond for the next delivery
// before acknowledging. A busy consumer so acknowledges about once per half
// prefetch (each acknowledgement is a frame the client and the broker both
// process). The wait applies only while deliveries flow: a delivery that came
// after the worker had waited longer than that millisecond (a reply, a
// trickle) is acknowledged as soon as Handle returns, as waiting for a next
// one would only delay it. A worker stops holding once the oldest held
// delivery was handled 20 ms ago or a batch took 20 ms to handle (what is
// held while a batch runs waits for it to return), so a connection lost under
// a slow handler redelivers little of its finished work. Shutdown and a
// failing session acknowledge at once.
//
// Each subscription owns its connection and its reconnect loop: a failure in one
// subscription never restarts another. After a session ends for any reason other
// than shutdown, the subscription waits its ReconnectDelay (1 s by default) and
// reopens. The wait follows a retrypolicy.Exponential backoff: it doubles on
// consecutive failed sessions, jittered, up to 2 s (or the delay itself when it
// is larger), so a consumer is back within about two seconds of its broker; a
// stream that cannot open for a reason waiting does not fix (a missing queue,
// refused access: messaging.IsPermanent) doubles up to 30 s instead. A healthy
// session starts the backoff again from the configured delay.
//
// # Topology
//
// With EstablishTopology (the default) a subscription declares its queue, its
// exchanges and its bindings each time its stream opens, so a binding deleted
// while the service runs comes back at the next reconnect: a durable fanout
// exchange per Topics entry, as smarty/messaging v4 declares topics, and the
// exchange of each of its Bindings, of the binding's Kind, or a topic
// exchange when the binding routes by key and names no Kind, as the AceMQ
// family declares a key-routed topic (exchange orders, key order.*). With
// DeadLetters (the default) it also declares acemq.dlx and the {queue}.dlq
// and {queue}.parked queues set-aside messages go to. A queue or exchange
// that exists with other properties is used as it is, with one WARN in the
// broker's words, and the queue is not bound to an exchange of another kind
// than the binding's. doc/topology.md lists what each option declares.
//
// # Failure and settlement
//
// A handler fails by panicking. The runtime settles by itself, whatever the
// stack: it wraps every worker in a handlers/deadletter decorator, the one
// settlement layer, configured by SubscriptionOptions.Settlement (the
// options deadletter.New takes: Policy, Monitor, RefuseRetry, ...) and
// publishing through one batch.Writer over the connector the consumer reads
// from, shared by every subscription. So, with no option at all:
//
//   - a delivery that did not decode (Delivery.Undecodable set, not
//     messaging.ErrFiltered) is parked in {queue}.parked before any handler
//     sees it;
//   - a batch whose handler still panics once the stack gave up (an inner
//     handlers/retry spent its budget, five attempts by default, or at once
//     without one) is isolated: each message is handled alone, and the ones
//     that still fail are dead-lettered to {queue}.dlq, so their neighbours
//     are handled once and acknowledged.
//
// Settlement(deadletter.Options.Policy(p)) tells it the budget, so the
// reason of a dead-lettered message counts the attempts; give it the value
// retry.Options.Policy is given. State the settlement on the subscription
// and wrap no settlement of your own around a worker: one there still takes
// over for each batch it handles (the runtime's then sets nothing aside for
// it), so no message is set aside twice. A delivery whose Undecodable error
// wraps messaging.ErrFiltered is acknowledged without being handed to a
// handler.
//
// A settlement that could not be completed (a set-aside copy, a retry or an
// in-progress republish that could not be published) returns only those
// deliveries to their queue, alone, when the stream offers messaging.Requeuer
// (found through the decorators with messaging.As): the rest of the batch is
// acknowledged, Monitor.DeliveriesRequeued fires, and the session goes on;
// the worker then waits the reconnect delay before its next batch, so a
// settlement that keeps failing comes back at that pace.
//
// A panic that still escapes (a failure marked as an outage, a settlement
// that could not be completed on a stream that cannot requeue) is not
// recovered into an acknowledgement: the runtime logs it at ERROR with the
// panic value and the stack (WARN without the stack for an outage), does not
// acknowledge the batch, ends that subscription's session (closing its
// stream, so the broker redelivers every unacknowledged delivery) and
// reconnects after the delay. The process is not crashed: smarty/messaging
// v4 crashes it, but a library must not take down its host, and closing the
// stream gives the same at-least-once outcome.
//
// # Startup
//
// Consumer.Started waits until every subscription's first attempt to open
// its stream concluded and returns the first error (errors.Is matches the
// transport's sentinels: messaging.ErrNotFound for a queue that does not
// exist, messaging.ErrAccessRefused), so a component built on the consumer
// can fail its constructor on a permanent fault and close what it started,
// instead of leaving the consumer to retry it in the background.
//
// # Outages
//
// A failure that is a dependency's rather than a message's (messaging.IsOutage:
// the database or broker unreachable, a transaction that cannot begin or
// commit, a refused or reset connection, a timeout) is never a reason to give
// up on a message. handlers/retry holds such a batch in the process, spending
// no attempt, until the dependency answers, and tells the runtime through the
// handler's context; a handler that panics with such a failure has its batch
// left unacknowledged (WARN, no stack) for the broker to redeliver after the
// subscription reconnects. Either way the subscription is waiting on an
// outage until a batch is handled again: Monitor.OutageStarted and
// OutageEnded fire, a WARN line says so, and Consumer.Waiting and
// Consumer.Health report it, for a readiness or /status endpoint. On shutdown
// a worker waiting on an outage has its context cancelled at once, whatever
// the strategy's timeout: its batch stays unacknowledged.
//
// # Shutdown
//
// Close cancels the soft context: reading stops and workers finish according to
// the subscription's ShutdownStrategy. ShutdownStrategyDrain handles what is
// already buffered, ShutdownStrategyCurrentBatch finishes and acknowledges the
// batch in progress, ShutdownStrategyImmediate cancels the handlers' context at
// once and stops before the next batch (a batch whose Handle still returns
// normally is acknowledged). When workers have not concluded within
// the strategy's timeout, the hard context (the one Handle receives) is
// cancelled, Monitor.ShutdownForced fires and a WARN is logged. A batch whose
// Handle still returns normally after that is acknowledged (within the
// transport's own bound): its handler may already have republished a copy, as
// the settlement decorator does, and redelivering the original would make a
// second one. A handler that ignores its cancelled context is waited for at
// most one further second; then the acknowledgements are cancelled too and it
// is abandoned (its batch is never acknowledged). Close returns after every
// subscription has ended.
package streaming
