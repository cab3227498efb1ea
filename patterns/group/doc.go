// Package group runs several consumers over one queue, started and stopped
// together.
//
//	g, err := group.New(ctx, transport, "orders", 4, handler)
//	if err != nil {
//		return err // a member did not start; the others were closed
//	}
//	defer g.Close()
//
// Concurrency or a group? Workers of one subscription
// (streaming.SubscriptionOptions.AddWorkers) share one consumer, one channel
// and one prefetch. A group runs n consumers, each a streaming consumer with a
// subscription, a connection, a channel and a prefetch of its own: use it when
// handlers are slow enough that one channel's prefetch is the limit, or for a
// fair share across processes (the broker round-robins between consumers, so
// four here compete evenly with four in another instance). When a member
// stops, the broker hands what it held unacknowledged to the others.
//
// New(ctx, connector, queue, n, handler, options...) starts the members and
// waits for every one's first open (streaming.Consumer.Started), bounded by
// ctx and Options.StartTimeout; if any failed, it closes every member and
// returns the error, which errors.Is matches against the transport's
// sentinels (messaging.ErrNotFound for a missing queue). NewEach takes a
// handler per member (for per-member state: an ordering.New instance orders
// what one consumer receives). Options.Subscription applies streaming
// subscription options to every member.
//
// Close closes every member at once and waits for all, so it takes one
// shutdown bound (the subscription's ShutdownStrategy), not n, and returns
// the members' errors joined (messaging.ErrShutdownForced when a member's
// handlers were abandoned). CloseMember(i) stops one (the others take over
// its messages); Health reports a member waiting on an outage.
//
// Ordering across a group: each member orders only what it receives. For one
// consumer per key, publish with ordering.PartitionedRoutingKey and give each
// partition queue its own consumer (or group of one).
package group
