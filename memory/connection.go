package memory

import (
	"context"

	"github.com/warrenmq/messaging"
)

var (
	_ messaging.Connection   = (*connection)(nil)
	_ messaging.Reader       = (*reader)(nil)
	_ messaging.Stream       = (*stream)(nil)
	_ messaging.Writer       = (*writer)(nil)
	_ messaging.CommitWriter = (*commitWriter)(nil)
)

// connection is one link to the broker. All of its state is guarded by the
// broker's lock.
type connection struct {
	broker  *Broker
	closed  bool
	readers map[*reader]struct{}
	writers map[*writer]struct{}
}

func (c *connection) usableLocked() error {
	if c.closed {
		return closedError("connection")
	}
	return nil
}

// Reader opens a reader on this connection.
func (c *connection) Reader(ctx context.Context) (messaging.Reader, error) {
	r := &reader{conn: c, streams: map[*stream]struct{}{}}
	if err := register(ctx, c, "open a reader", c.readers, r); err != nil {
		return nil, err
	}
	return r, nil
}

// Writer opens a writer that publishes each Write at once.
func (c *connection) Writer(ctx context.Context) (messaging.Writer, error) {
	w, err := c.openWriter(ctx)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// CommitWriter opens a writer that holds writes until Commit.
func (c *connection) CommitWriter(ctx context.Context) (messaging.CommitWriter, error) {
	w, err := c.openWriter(ctx)
	if err != nil {
		return nil, err
	}
	return &commitWriter{writer: w}, nil
}

func (c *connection) openWriter(ctx context.Context) (*writer, error) {
	w := &writer{conn: c}
	if err := register(ctx, c, "open a writer", c.writers, w); err != nil {
		return nil, err
	}
	return w, nil
}

// register adds what c opened to its set (c.readers or c.writers), so Close
// closes it; op names the step in an error, such as a closed connection's.
func register[T comparable](ctx context.Context, c *connection, op string, set map[T]struct{}, opened T) error {
	return c.locked(ctx, op, func(*Broker) error {
		set[opened] = struct{}{}
		return nil
	})
}

// Close closes the connection's readers, streams and writers, requeues what
// its streams had not acknowledged, and deletes its exclusive queues. Closing
// twice is harmless.
func (c *connection) Close() error {
	b := c.broker
	b.mu.Lock()
	defer b.unlock()
	c.closeLocked()
	return nil
}

func (c *connection) closeLocked() {
	if c.closed {
		return
	}
	c.closed = true
	for r := range c.readers {
		r.closeLocked(closedError("connection"))
	}
	for w := range c.writers {
		w.closeLocked()
	}
	b := c.broker
	for _, q := range b.queues {
		if q.options.Exclusive && q.owner == c {
			b.deleteQueueLocked(q)
		}
	}
	delete(b.connections, c)
}
