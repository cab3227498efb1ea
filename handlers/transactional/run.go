package transactional

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
)

// Run runs fn in one transaction outside a consumer: the place where a
// service's own code (an HTTP handler placing an order, a job) stores its
// rows and the messages they cause together. It opens a CommitWriter on
// connector, calls fn with the transaction (State.Tx, over an outbox) and a
// writer into it (State.Writer), and commits when fn returns nil. When fn
// returns an error or panics, it rolls back and returns that error (or
// re-panics); a failed commit is returned wrapped (over the outbox,
// errors.Is reports sqlmq.ErrCommitUnknown when the COMMIT's answer was lost
// and the database could not be asked whether it took the rows).
//
// Each call opens and closes one connection of connector: cheap over the
// outbox (sqlmq), a dial over a broker transport, where a consumer's batches
// are better served by New, which keeps its connection.
func Run(ctx context.Context, connector messaging.Connector, fn func(ctx context.Context, state State) error) (err error) {
	ctx, slot := messaging.WithTransactionSlot(ctx)
	connection, err := connector.Connect(ctx)
	if err != nil {
		return fmt.Errorf("transactional: connect: %w", err)
	}
	defer func() { err = joinClose(err, connection) }()
	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		return fmt.Errorf("transactional: begin the transaction: %w", err)
	}
	if writer == nil {
		return errors.New("transactional: the connection returned a nil commit writer")
	}
	defer func() { err = joinClose(err, writer) }()
	committed := false
	defer func() {
		if !committed {
			_ = writer.Rollback() // fn failed or panicked: nothing of it stays
		}
	}()
	if err := fn(ctx, State{Tx: slot.Tx, Writer: boundWriter{writer: writer}}); err != nil {
		return err
	}
	if err := writer.Commit(); err != nil {
		return fmt.Errorf("transactional: commit: %w", err) // rolled back, as New does after a failed commit
	}
	committed = true
	return nil
}

// joinClose closes c and adds its failure to err; one that was closed
// already is not a failure.
func joinClose(err error, c interface{ Close() error }) error {
	if closeErr := c.Close(); closeErr != nil && !errors.Is(closeErr, messaging.ErrClosed) {
		return errors.Join(err, closeErr)
	}
	return err
}
