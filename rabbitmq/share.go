package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
)

// role is what a shared connection carries (Options.ShareConnections).
type role int

const (
	// publishing carries every writer's and commit writer's channel.
	publishing role = iota
	// consuming carries readers, streams, acknowledgements and declarations:
	// it never publishes, so a memory alarm, which blocks the connections
	// that publish, never holds up an acknowledgement or a declaration.
	consuming
	roles = 2
)

func (r role) String() string {
	if r == publishing {
		return "publishing"
	}
	return "consuming"
}

// link is the one connection of a role, and the dial in flight, if any,
// that every handle needing one waits on rather than dialling its own.
type link struct {
	conn    *connection
	dialing *dial
}

// dial is one dial of a shared connection; err is set before done closes.
type dial struct {
	done chan struct{}
	err  error
}

// connectShared returns a handle on the connector's shared connections. It
// binds the publishing connection at once, dialling it when it is missing or
// has ended, so that Connect fails, as without sharing, when the broker does
// not answer; the consuming connection is bound on the handle's first reader
// or declaration.
func (c *connector) connectShared(ctx context.Context) (messaging.Connection, error) {
	h := &handle{connector: c, opened: map[kept]struct{}{}}
	if _, err := h.on(ctx, publishing); err != nil {
		return nil, err
	}
	return h, nil
}

// acquire returns the live connection of r and counts one more user of it.
// Only one dial of a role is in flight at a time: those who need the role
// meanwhile wait for it, within their ctx, and share its outcome, so a
// dropped shared connection is dialled once however many handles were on it.
func (c *connector) acquire(ctx context.Context, r role) (*connection, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, fmt.Errorf("connect through a closed rabbitmq connector; create a new one with rabbitmq.New: %w", messaging.ErrClosed)
		}
		l := &c.links[r]
		if l.conn != nil && l.conn.usable() == nil {
			c.users[l.conn]++
			conn := l.conn
			c.mu.Unlock()
			return conn, nil
		}
		if d := l.dialing; d != nil {
			c.mu.Unlock()
			if err := c.awaitDial(ctx, r, d); err != nil {
				return nil, err
			}
			continue
		}
		d := &dial{done: make(chan struct{})}
		l.conn, l.dialing = nil, d // an ended connection stays counted until its users release it
		c.mu.Unlock()

		conn, err := c.dialConnection(ctx)
		c.mu.Lock()
		l.dialing = nil
		if err == nil {
			l.conn = conn
			c.users[conn]++
		}
		c.mu.Unlock()
		d.err = err
		close(d.done)
		if err != nil {
			return nil, fmt.Errorf("dial the shared %s connection: %w", r, err)
		}
		c.config.logger.Debug(fmt.Sprintf("Opened the shared %s AMQP connection.", r), "role", r.String())
		return conn, nil
	}
}

// awaitDial waits for another caller's dial of r and returns its error, or
// nil to look again. A dial abandoned because its caller's ctx ended says
// nothing about the broker: the waiter looks again and may dial itself.
func (c *connector) awaitDial(ctx context.Context, r role, d *dial) error {
	select {
	case <-d.done:
	case <-ctx.Done():
		return fmt.Errorf("wait for the shared %s connection being dialled: %w", r, ctx.Err())
	}
	if d.err == nil || errors.Is(d.err, context.Canceled) || errors.Is(d.err, context.DeadlineExceeded) {
		return nil
	}
	return fmt.Errorf("dial the shared %s connection: %w", r, d.err)
}

// release counts one user of conn fewer; the last one closes it.
func (c *connector) release(conn *connection) error {
	c.mu.Lock()
	c.users[conn]--
	last := c.users[conn] <= 0
	if last {
		delete(c.users, conn)
		for r := range c.links {
			if c.links[r].conn == conn {
				c.links[r].conn = nil
			}
		}
	}
	c.mu.Unlock()
	if !last {
		return nil
	}
	return conn.Close()
}

// handle is what Connect returns with Options.ShareConnections: a
// messaging.Connection whose writers are channels of the shared publishing
// connection and whose readers and declarations are channels of the shared
// consuming one. A role is bound on first use and kept: once its connection
// has ended, the handle answers messaging.ErrClosed for that role as a
// connection of its own would, and its user connects again.
type handle struct {
	connector *connector

	mu     sync.Mutex
	closed bool
	bound  [roles]*connection
	opened map[kept]struct{} // the readers and writers still open
}

var (
	_ messaging.Connection = (*handle)(nil)
	_ messaging.Declarer   = (*handle)(nil)
)

// on returns the connection of r this handle is bound to, binding it first.
func (h *handle) on(ctx context.Context, r role) (*connection, error) {
	h.mu.Lock()
	closed, conn := h.closed, h.bound[r]
	h.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("use of a closed AMQP connection; connect again: %w", messaging.ErrClosed)
	case conn != nil:
		return conn, nil
	}
	conn, err := h.connector.acquire(ctx, r)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed || h.bound[r] != nil { // closed, or bound by a concurrent call, meanwhile
		closed, kept := h.closed, h.bound[r]
		h.mu.Unlock()
		_ = h.connector.release(conn)
		if closed {
			return nil, fmt.Errorf("the AMQP connection was closed while it connected: %w", messaging.ErrClosed)
		}
		return kept, nil
	}
	h.bound[r] = conn
	h.mu.Unlock()
	return conn, nil
}

// kept is a reader or writer that a handle closes with itself.
type kept interface {
	io.Closer
	// hook is where its Close finds what to call to be forgotten.
	hook() *func()
}

func (w *writer) hook() *func() { return &w.onClose }
func (r *reader) hook() *func() { return &r.onClose }

func asKept(opened io.Closer, err error) (kept, error) {
	if err != nil {
		return nil, err
	}
	return opened.(kept), nil
}

// open opens a reader or writer (what) on the connection of r and keeps it.
func (h *handle) open(ctx context.Context, r role, what string, open func(*connection) (kept, error)) (kept, error) {
	conn, err := h.on(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	opened, err := open(conn)
	if err != nil {
		return nil, err
	}
	if err := h.keep(opened); err != nil {
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	return opened, nil
}

// keep records an opened reader or writer, so that Close closes it, and sets,
// under the handle's lock, what its own Close calls to be forgotten. On a
// handle closed meanwhile it closes it instead.
func (h *handle) keep(opened kept) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = opened.Close()
		return fmt.Errorf("the AMQP connection was closed while a channel opened: %w", messaging.ErrClosed)
	}
	*opened.hook() = func() {
		h.mu.Lock()
		delete(h.opened, opened)
		h.mu.Unlock()
	}
	h.opened[opened] = struct{}{}
	h.mu.Unlock()
	return nil
}

// Writer opens a confirm-mode channel on the shared publishing connection.
func (h *handle) Writer(ctx context.Context) (messaging.Writer, error) {
	opened, err := h.open(ctx, publishing, "a writer", func(c *connection) (kept, error) { return asKept(c.Writer(ctx)) })
	if err != nil {
		return nil, err
	}
	return opened.(messaging.Writer), nil
}

// CommitWriter opens a confirm-mode channel on the shared publishing
// connection whose writes take effect on Commit.
func (h *handle) CommitWriter(ctx context.Context) (messaging.CommitWriter, error) {
	opened, err := h.open(ctx, publishing, "a commit writer", func(c *connection) (kept, error) { return asKept(c.CommitWriter(ctx)) })
	if err != nil {
		return nil, err
	}
	return opened.(messaging.CommitWriter), nil
}

// Reader opens a channel for consuming on the shared consuming connection.
func (h *handle) Reader(ctx context.Context) (messaging.Reader, error) {
	opened, err := h.open(ctx, consuming, "a reader", func(c *connection) (kept, error) { return asKept(c.Reader(ctx)) })
	if err != nil {
		return nil, err
	}
	return opened.(messaging.Reader), nil
}

// Close closes the readers and writers opened through the handle, with their
// channels, and lets go of the shared connections; the last handle on a
// shared connection closes it. Later calls fail with messaging.ErrClosed.
func (h *handle) Close() error {
	if !markClosed(&h.mu, &h.closed) {
		return nil
	}
	h.mu.Lock()
	opened := make([]kept, 0, len(h.opened))
	for o := range h.opened {
		opened = append(opened, o)
	}
	bound := h.bound
	h.bound = [roles]*connection{}
	h.mu.Unlock()

	var errs []error
	for _, o := range opened {
		if err := o.Close(); err != nil && !errors.Is(err, messaging.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for _, conn := range bound {
		if conn != nil {
			errs = append(errs, h.connector.release(conn))
		}
	}
	return errors.Join(errs...)
}

// consumingOp runs f on the shared consuming connection: declarations and
// inspections travel there, so an exclusive queue a handle declares can be
// consumed by its readers, and no declaration waits behind a blocked
// publishing connection.
func consumingOp[T any](ctx context.Context, h *handle, f func(*connection) (T, error)) (T, error) {
	conn, err := h.on(ctx, consuming)
	if err != nil {
		var zero T
		return zero, err
	}
	return f(conn)
}

func (h *handle) declare(ctx context.Context, f func(*connection) error) error {
	_, err := consumingOp(ctx, h, func(conn *connection) (struct{}, error) { return struct{}{}, f(conn) })
	return err
}

// DeclareExchange declares an exchange on the consuming connection; see
// the connection's.
func (h *handle) DeclareExchange(ctx context.Context, x messaging.Exchange) error {
	return h.declare(ctx, func(c *connection) error { return c.DeclareExchange(ctx, x) })
}

// DeclareQueue declares a queue on the consuming connection, which owns it
// when it is exclusive.
func (h *handle) DeclareQueue(ctx context.Context, q messaging.Queue) error {
	return h.declare(ctx, func(c *connection) error { return c.DeclareQueue(ctx, q) })
}

// Bind binds a queue to an exchange on the consuming connection.
func (h *handle) Bind(ctx context.Context, b messaging.Binding) error {
	return h.declare(ctx, func(c *connection) error { return c.Bind(ctx, b) })
}

// DeleteQueue deletes a queue on the consuming connection.
func (h *handle) DeleteQueue(ctx context.Context, name string) error {
	return h.declare(ctx, func(c *connection) error { return c.DeleteQueue(ctx, name) })
}

// DeleteExchange deletes an exchange on the consuming connection.
func (h *handle) DeleteExchange(ctx context.Context, name string) error {
	return h.declare(ctx, func(c *connection) error { return c.DeleteExchange(ctx, name) })
}

// InspectQueue reads a queue's state on the consuming connection.
func (h *handle) InspectQueue(ctx context.Context, name string) (messaging.QueueState, error) {
	return consumingOp(ctx, h, func(c *connection) (messaging.QueueState, error) { return c.InspectQueue(ctx, name) })
}

// InspectExchange checks that an exchange exists, on the consuming connection.
func (h *handle) InspectExchange(ctx context.Context, name string) error {
	return h.declare(ctx, func(c *connection) error { return c.InspectExchange(ctx, name) })
}

// DeclareRetryRung declares a retry rung on the consuming connection; see
// the connection's.
func (h *handle) DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error {
	return h.declare(ctx, func(c *connection) error { return c.DeclareRetryRung(ctx, queue, rung, ttl) })
}

// SupportsStreams reports that RabbitMQ consumes stream queues; see the
// connector's.
func (h *handle) SupportsStreams() bool { return true }
