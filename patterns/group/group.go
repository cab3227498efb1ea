package group

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/streaming"
)

// Group is n consumers of one queue, started and stopped together. Each member
// is a streaming consumer with a subscription of its own, so its own
// connection, channel and prefetch: the broker shares the queue's messages
// among them (round-robin within the prefetch), and a member that stops hands
// its unacknowledged deliveries back for the others.
type Group struct {
	queue   string
	monitor Monitor
	members []*member
	closing sync.Once
}

// member is one consumer of the group.
type member struct {
	index    int
	consumer *streaming.Consumer
	once     sync.Once
	err      error // what closing it returned
}

// New starts n consumers of queue, each running handler, and returns once
// every one opened its stream. If any fails to start (the broker unreachable,
// the queue missing, access refused: errors.Is matches the transport's
// sentinels), the members that started are closed and the error returned, so
// no member holds messages nothing will handle. The wait is bounded by ctx and
// Options.StartTimeout. connector is not closed by the group.
func New(ctx context.Context, connector messaging.Connector, queue string, n int, handler messaging.Handler, options ...Option) (*Group, error) {
	if handler == nil {
		return nil, fmt.Errorf("group: a consumer group of %s needs a handler", queue)
	}
	return NewEach(ctx, connector, queue, n, func(int) messaging.Handler { return handler }, options...)
}

// NewEach is New with a handler per member: handler(i) for member i, 0 <= i <
// n, called once each before anything starts. Use it when a member needs state
// of its own: an ordering.New instance orders what one consumer receives, so
// each member wants its own.
func NewEach(ctx context.Context, connector messaging.Connector, queue string, n int, handler func(member int) messaging.Handler, options ...Option) (*Group, error) {
	switch {
	case connector == nil:
		return nil, errors.New("group: a consumer group needs a connector")
	case queue == "":
		return nil, errors.New("group: a consumer group needs a queue")
	case n < 1:
		return nil, fmt.Errorf("group: a consumer group of %s needs at least one member, not %d", queue, n)
	case handler == nil:
		return nil, fmt.Errorf("group: a consumer group of %s needs a handler", queue)
	}
	handlers := make([]messaging.Handler, n)
	for i := range handlers {
		if handlers[i] = handler(i); handlers[i] == nil {
			return nil, fmt.Errorf("group: member %d of the consumer group of %s has no handler", i+1, queue)
		}
	}
	c := newConfig(options)
	g := &Group{queue: queue, monitor: c.monitor}
	for i := range n {
		subscription := append([]streaming.SubscriptionOption{streaming.SubscriptionOptions.AddWorkers(handlers[i])}, c.subscription...)
		consumerOptions := append([]streaming.Option{streaming.Options.Subscriptions(streaming.NewSubscription(queue, subscription...))}, c.consumer...)
		m := &member{index: i, consumer: streaming.New(connector, consumerOptions...)}
		g.members = append(g.members, m)
	}

	startCtx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range g.members {
		wg.Go(func() { errs[i] = m.consumer.Start(startCtx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			err = fmt.Errorf("group: member %d of %d consuming %s did not start, so the group was closed: %w", i+1, n, queue, err)
			g.monitor.StartFailed(queue, err)
			_ = g.Close()
			return nil, err
		}
	}
	g.monitor.Started(queue, n)
	return g, nil
}

// Members returns how many members the group was started with.
func (g *Group) Members() int { return len(g.members) }

// CloseMember stops member i (0 <= i < Members) alone, within its shutdown
// strategy's bound; the broker hands what it held unacknowledged to the other
// members. It returns what the member's Close returned
// (messaging.ErrShutdownForced when its handlers had to be abandoned).
// Closing a member twice returns the same.
func (g *Group) CloseMember(i int) error {
	if i < 0 || i >= len(g.members) {
		return fmt.Errorf("group: no member %d in a group of %d consuming %s", i, len(g.members), g.queue)
	}
	return g.closeMember(g.members[i])
}

func (g *Group) closeMember(m *member) error {
	m.once.Do(func() {
		if err := m.consumer.Close(); err != nil {
			m.err = fmt.Errorf("group: member %d of %d consuming %s: %w", m.index+1, len(g.members), g.queue, err)
		}
		g.monitor.MemberClosed(g.queue)
	})
	return m.err
}

// Close stops every member at once and returns when all have stopped: each
// finishes by its subscription's shutdown strategy, within its bound, so the
// group takes one bound, not n. It returns the members' errors joined, each
// naming its member: errors.Is(err, messaging.ErrShutdownForced) says that
// some member's handlers had to be abandoned. It is safe to call more than
// once; a later call returns nil once the first has returned.
func (g *Group) Close() error {
	var err error
	g.closing.Do(func() {
		errs := make([]error, len(g.members))
		var wg sync.WaitGroup
		for i, m := range g.members {
			wg.Go(func() { errs[i] = g.closeMember(m) })
		}
		wg.Wait()
		err = errors.Join(errs...)
	})
	return err
}

// Health returns nil while no member is waiting on an outage, else the first
// member's report (streaming.Consumer.Health), for a readiness check.
func (g *Group) Health() error {
	for _, m := range g.members {
		if err := m.consumer.Health(); err != nil {
			return err
		}
	}
	return nil
}

var _ interface{ Close() error } = (*Group)(nil)
