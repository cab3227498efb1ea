package streaming

import (
	"context"
	"sync"

	"github.com/warrenmq/messaging"
)

// Consumer is the runtime New returns: a messaging.ListenCloser that also
// reports subscriptions waiting on an outage (Waiting, Health).
type Consumer struct {
	connector messaging.Connector
	config    config
	soft      context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	// healths has one entry per subscription with a queue, in order.
	healths []*health
	runners []*runner

	mu        sync.Mutex
	listening bool
	closed    bool
}

var _ messaging.ListenCloser = (*Consumer)(nil)

// New returns the consumer runtime over connector. Nothing connects until
// Listen. The connector is not closed by Close; its owner closes it.
func New(connector messaging.Connector, options ...option) *Consumer {
	cfg := newConfig(options)
	soft, cancel := context.WithCancel(cfg.ctx)
	c := &Consumer{
		connector: connector,
		config:    cfg,
		soft:      soft,
		cancel:    cancel,
		done:      make(chan struct{}),
	}
	for _, subscription := range cfg.subscriptions {
		if subscription == nil {
			continue
		}
		r := newRunner(connector, subscription, cfg, soft)
		c.runners = append(c.runners, r)
		c.healths = append(c.healths, r.health)
	}
	return c
}

// Listen runs every subscription and blocks until Close is called (or the
// parent context ends) and every subscription has concluded.
func (c *Consumer) Listen() {
	c.mu.Lock()
	if c.closed && !c.listening {
		c.mu.Unlock()
		return
	}
	if c.listening {
		c.mu.Unlock()
		<-c.done
		return
	}
	c.listening = true
	c.mu.Unlock()
	defer close(c.done)

	var wg sync.WaitGroup
	for _, r := range c.runners {
		wg.Go(r.run)
	}
	<-c.soft.Done()
	wg.Wait()
	for _, r := range c.runners {
		r.close()
	}
}

// Close stops reading, lets workers conclude by their shutdown strategy and
// waits for Listen to end. It is safe to call more than once.
func (c *Consumer) Close() error {
	c.cancel()
	c.mu.Lock()
	c.closed = true
	listening := c.listening
	c.mu.Unlock()
	if listening {
		<-c.done
	}
	return nil
}
