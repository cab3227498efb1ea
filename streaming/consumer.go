package streaming

import (
	"context"
	"sync"

	"github.com/warrenmq/messaging"
)

// consumer is the ListenCloser New returns.
type consumer struct {
	connector messaging.Connector
	config    config
	soft      context.Context
	cancel    context.CancelFunc
	done      chan struct{}

	mu        sync.Mutex
	listening bool
	closed    bool
}

// New returns the consumer runtime over connector. Nothing connects until
// Listen. The connector is not closed by Close; its owner closes it.
func New(connector messaging.Connector, options ...option) messaging.ListenCloser {
	cfg := newConfig(options)
	soft, cancel := context.WithCancel(cfg.ctx)
	return &consumer{
		connector: connector,
		config:    cfg,
		soft:      soft,
		cancel:    cancel,
		done:      make(chan struct{}),
	}
}

// Listen runs every subscription and blocks until Close is called (or the
// parent context ends) and every subscription has concluded.
func (c *consumer) Listen() {
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
	for _, subscription := range c.config.subscriptions {
		if subscription == nil {
			continue
		}
		r := newRunner(c.connector, subscription, c.config, c.soft)
		wg.Go(r.run)
	}
	<-c.soft.Done()
	wg.Wait()
}

// Close stops reading, lets workers conclude by their shutdown strategy and
// waits for Listen to end. It is safe to call more than once.
func (c *consumer) Close() error {
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
