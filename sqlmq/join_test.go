package sqlmq

import (
	"context"
	"database/sql"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

// The outbox joins a transaction of the caller's: its rows commit or roll
// back with the caller's own, and the caller's Commit and Rollback are the
// only ones.
func TestJoinFixture(t *testing.T) {
	gunit.Run(new(JoinFixture), t)
}

type JoinFixture struct {
	*gunit.Fixture
	t *testing.T // the bubble's
	h *harness
}

func (f *JoinFixture) run(test func()) {
	inBubble(f, func(t *testing.T) {
		f.t = t
		f.h = newHarness(t, openSQLite(t))
		_, err := f.h.db.Exec("CREATE TABLE orders (id TEXT NOT NULL)")
		f.So(err, should.BeNil)
		test()
	})
}

// begin starts the caller's transaction with an order of its own in it and
// a joined writer that wrote one message.
func (f *JoinFixture) begin(id string) (*sql.Tx, messaging.CommitWriter) {
	ctx := context.Background()
	tx, err := f.h.db.BeginTx(ctx, nil)
	f.So(err, should.BeNil)
	_, err = tx.ExecContext(ctx, "INSERT INTO orders (id) VALUES (?)", id)
	f.So(err, should.BeNil)
	connection, err := f.h.connector.Connect(ctx)
	f.So(err, should.BeNil)
	writer, err := connection.CommitWriter(WithTransaction(ctx, tx))
	f.So(err, should.BeNil)
	n, err := writer.Write(ctx, message(id))
	f.So(n, should.Equal, 1)
	f.So(err, should.BeNil)
	return tx, writer
}

// The caller's rollback takes the message with it, even when the writer is
// committed afterwards (its Commit commits nothing), and even when SQLite
// gives the rolled-back row's id to the next row.
func (f *JoinFixture) TestTheCallersRollbackLeavesNoMessage() {
	f.run(func() {
		f.h.Listen()
		tx, writer := f.begin("rolled-back")
		f.So(tx.Rollback(), should.BeNil)
		f.So(f.h.Commit(message("after")), should.BeNil) // the same id, 1
		f.So(writer.Commit(), should.BeNil)
		f.So(ids(f.h.publisher.Next(f.t)), should.Equal, []string{"after"})
		f.h.monitor.AwaitConfirmed(f.t, 1)
		f.So(f.h.publisher.Published(), should.Equal, []string{"after"})
		f.So(f.h.count("message_id = 'rolled-back'"), should.Equal, 0)
		f.So(f.h.countIn("orders"), should.Equal, 0)
	})
}

func (f *JoinFixture) TestTheCallersCommitPublishesTheMessageAtOnce() {
	f.run(func() {
		f.h.Listen()
		tx, writer := f.begin("committed")
		f.So(f.h.count("1=1"), should.Equal, 0) // not visible before the caller commits
		f.So(tx.Commit(), should.BeNil)
		f.So(writer.Commit(), should.BeNil)
		f.So(ids(f.h.publisher.Next(f.t)), should.Equal, []string{"committed"})
		f.h.monitor.AwaitConfirmed(f.t, 1)
		f.So(f.h.countIn("orders"), should.Equal, 1)
		f.So(f.h.count("dispatched_us IS NOT NULL"), should.Equal, 1)
	})
}

// A writer never committed after the caller's commit loses nothing: the row
// is published once its lease runs out.
func (f *JoinFixture) TestAJoinedRowWhoseWriterIsNeverCommittedIsPublishedAfterItsLease() {
	f.run(func() {
		f.h.Listen()
		tx, _ := f.begin("forgotten")
		f.So(tx.Commit(), should.BeNil)
		elapse(testLease + testSweep)
		f.So(ids(f.h.publisher.Next(f.t)), should.Equal, []string{"forgotten"})
	})
}

// A Write refused for a wire limit stores nothing in the caller's
// transaction, which stays usable.
func (f *JoinFixture) TestARefusedWriteLeavesTheCallersTransactionUsable() {
	f.run(func() {
		tx, writer := f.begin("kept")
		refused := message("refused")
		refused.Headers = map[string]any{"x-acemq-id": "forged"}
		_, err := writer.Write(context.Background(), refused)
		f.So(err, should.NotBeNil)
		f.So(tx.Commit(), should.BeNil)
		f.So(writer.Commit(), should.BeNil)
		f.So(f.h.count("1=1"), should.Equal, 1)
	})
}
