package sqlmq

import (
	"context"
	"database/sql"
	"testing"

	"github.com/warrenmq/messaging"
)

// A service that manages its own transaction writes its messages into it: on
// each database, the message's row is in the caller's transaction as soon as
// it is written, a transaction the caller rolls back leaves no message (even
// when the writer is then committed: its Commit commits nothing), and one it
// commits is published, the caller's rows and its message together.
func TestIntegrationTheOutboxJoinsTheCallersTransaction(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		mq := newBroker(t) // the broker lock before the database's
		db := b.open(t)
		table := outboxTable(t, b, db)
		exchange := mq.exchange("joined")
		received := mq.consume(mq.queue("joined", exchange))
		orders := table + "_orders"
		if _, err := db.Exec("CREATE TABLE " + orders + " (id varchar(64) NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + orders) })
		outbox := newInstance(t, b, db, table)
		outbox.listen(t)
		connection, err := outbox.connector.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = connection.Close() })

		ids := messageIDs("joined", 2)
		rolledBack, committed := ids[0], ids[1]
		for _, id := range ids {
			writeInTransaction(t, db, connection, b.dialect.Rebind, orders, table, dispatchesTo(exchange, id)[0], id == committed)
		}
		received.await(committed)
		outbox.commit(t, dispatchesTo(exchange, "after-"+committed)...) // the relay has nothing else to publish
		received.await("after-" + committed)
		_, count := received.snapshot()
		if count[rolledBack] != 0 || count[committed] != 1 {
			t.Errorf("the rolled-back message arrived %d time(s), the committed one %d; want 0 and 1", count[rolledBack], count[committed])
		}
		var rows, stored int
		_ = db.QueryRow("SELECT COUNT(*) FROM " + orders).Scan(&rows)
		_ = db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&stored)
		if rows != 1 || stored != 2 {
			t.Errorf("%d order row(s) and %d outbox row(s); want the committed order and its message, and the later one", rows, stored)
		}
	})
}

// writeInTransaction begins a transaction of the test's own, inserts an order
// and writes d into it through the outbox, checks that the message's row is
// in the transaction, then commits it (or rolls it back) and commits the
// writer. The transaction never outlives the call.
func writeInTransaction(t *testing.T, db *sql.DB, connection messaging.Connection, rebind func(string) string, orders, table string, d messaging.Dispatch, commit bool) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, rebind("INSERT INTO "+orders+" (id) VALUES (?)"), d.MessageID); err != nil {
		t.Fatal(err)
	}
	writer, err := connection.CommitWriter(WithTransaction(ctx, tx))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = writer.Close() }()
	if _, err := writer.Write(ctx, d); err != nil {
		t.Fatalf("write into the caller's transaction: %v", err)
	}
	var inTx int
	if err := tx.QueryRowContext(ctx, rebind("SELECT COUNT(*) FROM "+table+" WHERE message_id = ?"), d.MessageID).Scan(&inTx); err != nil || inTx != 1 {
		t.Fatalf("the caller's transaction holds %d row(s) of the message (%v); want it written there", inTx, err)
	}
	if commit {
		err = tx.Commit()
	} else {
		err = tx.Rollback()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Commit(); err != nil {
		t.Fatalf("hand the messages over: %v", err)
	}
}
