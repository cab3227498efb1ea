// Package ordering handles the messages about one thing one at a time, in the
// order the stream delivered them, while the workers of a subscription handle
// different things at once, as a messaging.Middleware.
//
//	ordered := ordering.New(ordering.ByHeader("x-order-id"), handle)
//	subscription := streaming.NewSubscription("orders",
//		streaming.SubscriptionOptions.AddWorkers(ordered, ordered, ordered, ordered))
//
// A queue delivers in order; several workers stop honouring that. The guard
// gives each message a place in the line of its key: it runs when it heads
// the line, and hands the key on when it returns or panics. Lines are filled in
// the order the stream delivered (by delivery tag): workers take deliveries in
// order but can reach the handler in any order, so a message waits, at most
// Options.ArrivalWindow (100 ms), for the lower tags of its stream to arrive
// before it takes its place. A batch of several messages is handed to the
// inner handler one message at a time, in delivery order, each in its key's
// turn: two batches taken at the same moment can interleave their tags, and
// when the same two keys cross between them no order of whole batches keeps
// both keys in order. A key with nothing in its line
// is forgotten, so memory follows what is in flight, not what was ever seen.
//
// Keys: ByHeader(name) (fmt.Sprint of the header's value; a missing header
// is an empty key), ByCorrelation() (the correlation id), or any Key
// function. An empty key is not ordered; a key is forgotten when no batch
// holds it. It orders what reaches this handler instance, in this process:
// share one instance among the workers of a subscription. Unlike a per-key
// mutex, it waits for the lower delivery tags of the stream, so two workers
// racing to the handler cannot swap two messages of one key. A delivery set
// aside before the handler (undecodable) or filtered never arrives, and costs
// the next one the arrival window; after a reconnect the tags start again at
// 1, and the first ones of the new channel are taken in arrival order. A
// worker that takes longer than the window to reach the handler (starved of
// CPU) can be overtaken; Monitor.GapSkipped reports each window that ran out.
// Across consumers, order is a routing decision: PartitionedRoutingKey(base,
// key, n) is "{base}.{Partition(key, n)}", Partition being FNV-1a 32 of the
// key's bytes mod n (n <= 1 is 0), as in the other AceMQ libraries.
//
// Redeliveries: order holds for first deliveries. A message handled but not
// acknowledged when its connection died comes back after later messages of
// its key were handled, and ordering hands it on again, after them. Put
// idempotency.Middleware inside it, so such a message is answered as a duplicate
// and never reaches the handler twice:
//
//	ordered := messaging.Chain(ordering.Middleware(key), idempotency.Middleware(store))(handle)
//
// Retries: put the guard outside handlers/retry, so a batch retried in the process
// keeps its keys until it succeeds or is set aside. A message retried through
// the broker (messaging.Retry) or dead-lettered goes out of its line, and the
// next message of its key runs. A key whose batches are slow holds the workers
// that took them: give a subscription more workers than it has slow keys.
//
// A wait ends when the batch's context does (shutdown): Handle panics with the
// context's error marked messaging.Outage, so the batch is not acknowledged
// and spends no attempt. Monitor reports the waits.
package ordering
