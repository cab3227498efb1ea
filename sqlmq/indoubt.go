package sqlmq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

// A COMMIT whose connection is lost after the statement was sent may have
// committed or not: the database answered, or was about to, when the answer
// was lost. The outbox knows the rows it wrote, so it asks, on a new
// connection, whether they are there.

// ErrCommitUnknown is wrapped by Commit's error when the COMMIT of the outbox
// transaction lost its connection and the database could not be asked, within
// Options.CommitCheckTimeout, whether the transaction's rows were stored. They may
// be: the service's own writes of that transaction are in the same doubt.
// Retry the work idempotently (look for what it stores first); the outbox
// publishes the rows if they were stored. messaging.IsOutage reports it.
var ErrCommitUnknown = errors.New("sqlmq: the outcome of the outbox transaction's COMMIT is unknown")

// checkBackoff spaces the questions of one commit check.
var checkBackoff = retrypolicy.Exponential(2, 50*time.Millisecond, time.Second).WithJitter(0)

// inDoubt reports whether a failed COMMIT may have committed: its connection
// was lost, or the wait for its answer ended, after the statement may have
// reached the database. A transaction database/sql had already ended was
// never committed.
func inDoubt(err error) bool {
	if errors.Is(err, sql.ErrTxDone) {
		return false
	}
	return messaging.IsOutage(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// resolve finds out whether the transaction whose COMMIT failed with
// commitErr, and which inserted first (a row id and its message id) first,
// was committed. It returns nil when it was, an error wrapping commitErr that
// says nothing was stored when it was not, and one wrapping ErrCommitUnknown
// when the database could not be asked. The monitor hears each outcome.
func (w *commitWriter) resolve(first int64, messageID string, count int, commitErr error) error {
	o := w.outbox
	bound := o.config.commitCheck
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), bound)
	defer cancel()
	stored, err := o.store.committed(ctx, first, messageID)
	for attempt := 1; err != nil && ctx.Err() == nil; attempt++ {
		timer := time.NewTimer(checkBackoff.Delay(attempt, nil))
		select {
		case <-timer.C:
			stored, err = o.store.committed(ctx, first, messageID)
		case <-ctx.Done():
			timer.Stop()
		}
	}
	o.config.monitor.CommitInDoubt(stored, err)
	switch {
	case err != nil:
		o.config.logger.Error(fmt.Sprintf("The COMMIT of an outbox transaction of [%d] message(s) lost its connection, and the database could not be asked within [%s] whether they were stored [%v].", count, bound, err),
			"count", count, "error", commitErr, "check_error", err)
		return fmt.Errorf("%w: the COMMIT of %d message(s) lost its connection (%w) and the database could not be asked within %s whether they were stored (%v); they may be: retry the work idempotently",
			ErrCommitUnknown, count, commitErr, bound, err)
	case stored:
		o.config.logger.Warn(fmt.Sprintf("The COMMIT of an outbox transaction of [%d] message(s) lost its connection; asked on a new connection, the transaction was committed and they will be published.", count),
			"count", count, "error", commitErr)
		return nil
	}
	o.config.logger.Warn(fmt.Sprintf("The COMMIT of an outbox transaction of [%d] message(s) lost its connection; asked on a new connection, the transaction was not committed.", count),
		"count", count, "error", commitErr)
	return fmt.Errorf("sqlmq: commit the outbox transaction: %w; asked on a new connection, it was not committed: none of its %d message(s) was stored, and running the work again is safe", commitErr, count)
}

// committed reports whether the row id, written with messageID, was
// committed. It inserts a probe with the same id in a transaction of its own
// and rolls it back: the database makes the probe wait while the transaction
// that wrote the row is still open (a lost connection the server has not yet
// seen, a COMMIT it is still writing), so the answer is the transaction's
// outcome, never a guess while it is in flight.
func (s *store) committed(ctx context.Context, id int64, messageID string) (bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("sqlmq: begin the check of a commit: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, s.q("INSERT INTO {t} (id, message_id, payload, created_us) VALUES (?, '', ?, 0)"+s.dialect.IgnoreDuplicate("id")), id, []byte{}); err != nil {
		return false, fmt.Errorf("sqlmq: check whether outbox row %d was committed: %w", id, err)
	}
	var found string
	if err := tx.QueryRowContext(ctx, s.q("SELECT message_id FROM {t} WHERE id = ?"), id).Scan(&found); err != nil {
		return false, fmt.Errorf("sqlmq: read back outbox row %d: %w", id, err)
	}
	if found != "" && found != messageID {
		return false, fmt.Errorf("sqlmq: outbox row %d holds message %s, not %s, which the transaction in doubt wrote", id, found, messageID)
	}
	return found == messageID, nil
}
