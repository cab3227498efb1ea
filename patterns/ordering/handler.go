package ordering

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/warrenmq/messaging"
)

// Middleware returns the ordering guard as a messaging.Middleware: messages that
// share a key are handled one at a time, in the order the stream delivered
// them; messages with different keys run at once. A message whose key is
// empty is not ordered. A batch of several messages is handed on one message
// at a time, each in its key's turn.
//
// Build it once and give the one handler to every worker of a subscription
// (streaming.SubscriptionOptions.AddWorkers(h, h, h, h)): it orders what
// passes through that instance. Put it outside handlers/retry, so a message
// retried in the process keeps its key until it succeeds or is set aside; a
// message retried through the broker (messaging.Retry) goes to the back of
// its queue and loses its place.
func Middleware(key Key, options ...Option) messaging.Middleware {
	c := newConfig(options)
	s := newSequencer()
	return func(inner messaging.Handler) messaging.Handler {
		return &handler{inner: inner, key: key, config: c, sequencer: s}
	}
}

// New is Middleware(key, options...)(inner): build it once and give the one
// handler to every worker of a subscription.
func New(key Key, inner messaging.Handler, options ...Option) messaging.Handler {
	return Middleware(key, options...)(inner)
}

type handler struct {
	inner     messaging.Handler
	key       Key
	config    config
	sequencer *sequencer
}

// Handle waits for each message's turn on its key, runs it and hands the key
// on.
func (h *handler) Handle(ctx context.Context, messages ...any) {
	deliveries := messaging.DeliveriesFrom(ctx)
	if len(deliveries) != len(messages) {
		panic(messaging.Fatal(fmt.Errorf("ordering: the handler received %d messages and its context %d envelopes; run it under the streaming runtime (or a decorator that sets messaging.WithDeliveries)", len(messages), len(deliveries))))
	}
	if len(deliveries) == 0 {
		h.inner.Handle(ctx, messages...)
		return
	}
	queue := deliveries[0].SourceQueue
	gated := true // every delivery has a tag of one stream
	for _, delivery := range deliveries {
		if delivery.DeliveryID == 0 || delivery.SourceQueue != queue {
			gated = false // without tags of one stream, arrival order is all there is
		}
	}
	if len(deliveries) == 1 {
		tickets := h.sequencer.arrive(queue, []group{h.group(messages[0], deliveries[0], gated)})
		defer h.sequencer.leave(tickets[0])
		h.await(ctx, tickets[0])
		h.inner.Handle(ctx, messages...)
		return
	}

	// Two batches taken at the same moment can interleave their tags, and
	// the same two keys can cross between them, so no order of whole batches
	// keeps both keys in order: each message takes its own place and the
	// batch is handled one message at a time, in delivery order.
	order := make([]int, len(deliveries))
	for i := range order {
		order[i] = i
	}
	if gated {
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(deliveries[x].DeliveryID, deliveries[y].DeliveryID) })
	}
	groups := make([]group, len(order))
	for i, at := range order {
		groups[i] = h.group(messages[at], deliveries[at], gated)
	}
	tickets := h.sequencer.arrive(queue, groups)
	defer func() {
		for _, t := range tickets {
			h.sequencer.leave(t) // a no-op for those that already left
		}
	}()
	for i, at := range order {
		h.await(ctx, tickets[i])
		h.inner.Handle(messaging.WithDeliveries(ctx, deliveries[at:at+1]), messages[at])
		h.sequencer.leave(tickets[i])
	}
}

// group is one delivery's place: its tag (when gated) and its key.
func (h *handler) group(message any, delivery messaging.Delivery, gated bool) group {
	var g group
	if gated {
		g.tags = []uint64{delivery.DeliveryID}
	}
	if h.key != nil {
		if key := h.key(message, delivery); key != "" {
			g.keys = []string{key}
		}
	}
	return g
}

// await waits for t to be admitted (at most the arrival window) and then for
// its turn; a cancelled context ends the wait with a panic marked as an
// outage, so the batch is not acknowledged and no attempt is spent.
func (h *handler) await(ctx context.Context, t *ticket) {
	select {
	case <-t.admitted:
	default:
		timer := time.NewTimer(h.config.window)
		select {
		case <-t.admitted:
		case <-timer.C:
			if h.sequencer.force(t) {
				h.config.monitor.GapSkipped(t.queue)
			}
		case <-ctx.Done():
			timer.Stop()
			panic(messaging.Outage(fmt.Errorf("ordering: stopped waiting for the earlier deliveries of %s: %w", t.queue, ctx.Err())))
		}
		timer.Stop()
	}
	select {
	case <-t.ready:
		return
	default:
	}
	started := time.Now()
	select {
	case <-t.ready:
		h.config.monitor.Waited(t.queue, time.Since(started))
	case <-ctx.Done():
		panic(messaging.Outage(fmt.Errorf("ordering: stopped waiting for the key(s) %q held by an earlier message of %s: %w", t.keys, t.queue, ctx.Err())))
	}
}
