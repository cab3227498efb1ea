package streaming

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
)

// Consumer is the runtime New returns: a messaging.ListenCloser that also
// reports subscriptions waiting on an outage (Waiting, Health).
type Consumer struct {
	connector messaging.Connector
	config    config
	// writer publishes what the subscriptions' settlement sets aside or
	// retries: one connection for the whole consumer, dialled on first use.
	writer  *batch.Writer
	soft    context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	startup *startup
	// healths has one entry per subscription with a queue, in order.
	healths []*health
	runners []*runner

	mu        sync.Mutex
	listening bool
	closed    bool
	// closeErr is what closing the runners reported, once Listen ended.
	closeErr error
}

var _ messaging.ListenCloser = (*Consumer)(nil)

// New returns the consumer runtime over connector. Nothing connects until
// Listen. The connector is not closed by Close; its owner closes it.
func New(connector messaging.Connector, options ...Option) *Consumer {
	cfg := newConfig(options)
	soft, cancel := context.WithCancel(cfg.ctx)
	c := &Consumer{
		connector: connector,
		config:    cfg,
		writer:    batch.New(connector),
		soft:      soft,
		cancel:    cancel,
		done:      make(chan struct{}),
	}
	count := 0
	for _, subscription := range cfg.subscriptions {
		if subscription != nil {
			count++
		}
	}
	c.startup = newStartup(count)
	for _, subscription := range cfg.subscriptions {
		if subscription == nil {
			continue
		}
		r := newRunner(connector, c.writer, subscription, cfg, soft, c.startup)
		c.runners = append(c.runners, r)
		c.healths = append(c.healths, r.health)
	}
	return c
}

// Listen runs every subscription and blocks until Close is called (or the
// parent context ends) and every subscription has concluded. A second call, or
// one after Close, waits for the first to end and runs nothing.
func (c *Consumer) Listen() {
	if c.begin() != nil {
		<-c.done
		return
	}
	c.run()
}

// Start runs Listen in a goroutine the consumer owns (Close waits for it) and
// then waits as Started does: it returns the first error of the
// subscriptions' first attempts to open their streams, or nil once every
// stream opened. A component built on the consumer calls it in its
// constructor, and closes the consumer when it fails. Done tells when the
// consumer has stopped. A consumer runs once: Start after Listen or Start
// fails, and after Close fails with an error matching messaging.ErrClosed.
func (c *Consumer) Start(ctx context.Context) error {
	if err := c.begin(); err != nil {
		return err
	}
	go c.run()
	return c.Started(ctx)
}

// Done is closed once the consumer has stopped: Listen has returned, or Close
// came before any Listen.
func (c *Consumer) Done() <-chan struct{} { return c.done }

// begin claims the one run of the consumer; it fails when the run was
// already claimed or the consumer is closed.
func (c *Consumer) begin() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return fmt.Errorf("streaming: start a consumer: %w", messaging.ErrClosed)
	case c.listening:
		return errors.New("streaming: the consumer is already running; it runs once, by Start or by Listen")
	}
	c.listening = true
	return nil
}

// run is the one run begin claimed.
func (c *Consumer) run() {
	defer close(c.done)

	var wg sync.WaitGroup
	for _, r := range c.runners {
		wg.Go(r.run)
	}
	<-c.soft.Done()
	wg.Wait()
	var errs []error
	for _, r := range c.runners {
		errs = append(errs, r.close())
	}
	if err := c.writer.Close(); err != nil {
		errs = append(errs, fmt.Errorf("streaming: close the settlement's writer: %w", err))
	}
	c.mu.Lock()
	c.closeErr = errors.Join(errs...)
	c.mu.Unlock()
}

// Started waits until every subscription's first attempt to open its stream
// concluded, and returns the first error among them (the broker unreachable,
// the queue missing, access refused: errors.Is matches the transport's
// sentinels, such as messaging.ErrNotFound), or nil when every stream opened.
// A component built on the consumer calls it after starting Listen, so that
// it fails its constructor on a permanent fault instead of retrying it in the
// background; the consumer keeps retrying until Close either way. It returns
// ctx's error when ctx ends first, and an error when the consumer is closed
// first.
func (c *Consumer) Started(ctx context.Context) error {
	select {
	case <-c.startup.done:
		return c.startup.err
	default:
	}
	select {
	case <-c.startup.done:
		return c.startup.err
	case <-ctx.Done():
		return fmt.Errorf("streaming: waiting for the subscriptions to open: %w", ctx.Err())
	case <-c.soft.Done():
		return errors.New("streaming: the consumer was closed before every subscription opened")
	}
}

// startup gathers how each subscription's first attempt to open concluded.
type startup struct {
	mu      sync.Mutex
	pending int
	err     error
	done    chan struct{}
}

func newStartup(subscriptions int) *startup {
	s := &startup{pending: subscriptions, done: make(chan struct{})}
	if subscriptions == 0 {
		close(s.done)
	}
	return s
}

// report records one subscription's first outcome; the first error, or the
// last success, concludes the startup.
func (s *startup) report(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == 0 {
		return
	}
	if err != nil {
		s.err, s.pending = err, 0
		close(s.done)
		return
	}
	s.pending--
	if s.pending == 0 {
		close(s.done)
	}
}

// Close stops reading, lets workers conclude by their shutdown strategy and
// waits for Listen to end. It returns an error matching
// messaging.ErrShutdownForced, naming the streams, when handlers missed the
// shutdown timeout and were cancelled (their deliveries go back to the
// broker), and the errors of closing the runtime's settlement. It is safe to
// call more than once; each call reports the same.
func (c *Consumer) Close() error {
	c.cancel()
	c.mu.Lock()
	first := !c.closed
	c.closed = true
	listening := c.listening
	if !listening && first {
		close(c.done) // no run will close it
	}
	c.mu.Unlock()
	if !listening {
		return c.writer.Close() // nothing was dialled: this only refuses later use
	}
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}
