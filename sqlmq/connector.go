package sqlmq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
)

// ErrCannotRead is returned by the outbox connection's Reader: the outbox only
// writes. Consume from the transport connector instead.
var ErrCannotRead = errors.New("sqlmq: the outbox cannot read; open readers on the transport connector, not on the outbox")

type connector struct {
	outbox    *outbox
	transport messaging.Connector // what the processor publishes through

	mu     sync.Mutex
	closed bool
	open   map[*connection]struct{}
}

// Connect returns a connection to the outbox table. It holds nothing until a
// writer is opened on it.
func (c *connector) Connect(ctx context.Context) (messaging.Connection, error) {
	if err := c.outbox.config.err; err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("sqlmq: connect: %w", messaging.ErrClosed)
	}
	conn := &connection{outbox: c.outbox, parent: c, writers: map[*commitWriter]struct{}{}}
	c.open[conn] = struct{}{}
	return conn, nil
}

// Unwrap returns the transport the outbox publishes through, so
// messaging.As finds its capabilities through the outbox.
func (c *connector) Unwrap() messaging.Connector { return c.transport }

// Close closes every connection still open, rolling back their uncommitted
// transactions, and releases the outbox's prepared insert. It does not close
// the transport or stop the processor.
func (c *connector) Close() error {
	c.mu.Lock()
	c.closed = true
	open := c.open
	c.open = map[*connection]struct{}{}
	c.mu.Unlock()
	var err error
	for conn := range open {
		err = errors.Join(err, conn.Close())
	}
	return errors.Join(err, c.outbox.store.close())
}

func (c *connector) forget(conn *connection) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.open, conn)
}

type connection struct {
	outbox *outbox
	parent *connector

	mu      sync.Mutex
	closed  bool
	writers map[*commitWriter]struct{}
}

// Reader fails with ErrCannotRead.
func (c *connection) Reader(context.Context) (messaging.Reader, error) {
	return nil, ErrCannotRead
}

// Writer returns a writer whose every Write is its own transaction: it stores
// the dispatches, commits, and hands them to the processor. Use CommitWriter to
// write in a transaction of your own.
func (c *connection) Writer(context.Context) (messaging.Writer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("sqlmq: open writer: %w", messaging.ErrClosed)
	}
	return &autoCommitWriter{connection: c}, nil
}

// CommitWriter begins a SQL transaction and returns a writer bound to it. When
// ctx carries a messaging.TransactionSlot, the live *sql.Tx is put in it so the
// caller's own statements join the transaction. Commit stores the buffered
// dispatches and commits; Rollback forgets them. The transaction ends when ctx
// does.
//
// When ctx carries a transaction of the caller's (WithTransaction), the writer
// joins it instead: see WithTransaction.
func (c *connection) CommitWriter(ctx context.Context) (messaging.CommitWriter, error) {
	if tx := joinedTransaction(ctx); tx != nil {
		if c.isClosed() {
			return nil, fmt.Errorf("sqlmq: open commit writer: %w", messaging.ErrClosed)
		}
		if slot := messaging.TransactionSlotFrom(ctx); slot != nil {
			slot.Tx = tx
		}
		return &joinedWriter{outbox: c.outbox, ctx: ctx, tx: tx}, nil
	}
	writer, err := c.begin(ctx)
	if err != nil {
		return nil, err
	}
	if slot := messaging.TransactionSlotFrom(ctx); slot != nil {
		slot.Tx = writer.tx
	}
	return writer, nil
}

func (c *connection) begin(ctx context.Context) (*commitWriter, error) {
	if c.isClosed() {
		return nil, fmt.Errorf("sqlmq: open commit writer: %w", messaging.ErrClosed)
	}
	// Neither the prepare nor BeginTx holds the connection's lock: both may
	// wait for a pooled database connection, and other writers of this
	// connection must be able to finish (and give theirs back) meanwhile.
	c.outbox.store.prepareInsert(ctx)
	tx, err := c.outbox.config.db.BeginTx(ctx, c.outbox.config.dialect.TxOptions(c.outbox.config.isolation))
	if err != nil {
		return nil, fmt.Errorf("sqlmq: begin the outbox transaction: %w", err)
	}
	writer := &commitWriter{outbox: c.outbox, connection: c, ctx: ctx, tx: tx}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.writers[writer] = struct{}{}
	}
	c.mu.Unlock()
	if closed {
		_ = tx.Rollback()
		return nil, fmt.Errorf("sqlmq: open commit writer: %w", messaging.ErrClosed)
	}
	return writer, nil
}

func (c *connection) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *connection) release(writer *commitWriter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.writers, writer)
}

// Close rolls back the transactions of writers not yet committed.
func (c *connection) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	writers := c.writers
	c.writers = map[*commitWriter]struct{}{}
	c.mu.Unlock()
	c.parent.forget(c)
	var err error
	for writer := range writers {
		err = errors.Join(err, writer.Rollback())
	}
	return err
}
