package ordering

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/warrenmq/messaging"
)

// New returns the ordering guard as a messaging.Middleware: batches whose
// messages share a key are handled one at a time, in the order the stream
// delivered them; batches with different keys run at once. A message whose
// key is empty is not ordered.
//
// Build it once and give the one handler to every worker of a subscription
// (streaming.SubscriptionOptions.AddWorkers(h, h, h, h)): it orders what
// passes through that instance. Put it outside handlers/retry, so a message
// retried in the process keeps its key until it succeeds or is set aside; a
// message retried through the broker (messaging.Retry) goes to the back of
// its queue and loses its place.
func New(key Key, options ...Option) messaging.Middleware {
	c := newConfig(options)
	s := newSequencer()
	return func(inner messaging.Handler) messaging.Handler {
		return &handler{inner: inner, key: key, config: c, sequencer: s}
	}
}

type handler struct {
	inner     messaging.Handler
	key       Key
	config    config
	sequencer *sequencer
}

// Handle waits for the batch's turn on each of its keys, runs it and hands
// the keys on.
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
	keys := make([]string, 0, len(deliveries))
	tags := make([]uint64, 0, len(deliveries))
	for i, delivery := range deliveries {
		if h.key != nil {
			if key := h.key(messages[i], delivery); key != "" {
				keys = append(keys, key)
			}
		}
		if tags != nil && delivery.DeliveryID != 0 && delivery.SourceQueue == queue {
			tags = append(tags, delivery.DeliveryID)
		} else {
			tags = nil // without tags of one stream, arrival order is all there is
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)

	t := h.sequencer.arrive(queue, tags, keys)
	defer h.sequencer.leave(t)
	h.await(ctx, t)
	h.inner.Handle(ctx, messages...)
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
		panic(messaging.Outage(fmt.Errorf("ordering: stopped waiting for the key(s) %q held by an earlier batch of %s: %w", t.keys, t.queue, ctx.Err())))
	}
}
