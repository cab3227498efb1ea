package sqlmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/sqldialect"
)

// A commit stores its rows with as few INSERT statements as the dialect
// allows; on SQLite, in batches of sqliteRowsPerInsert.

func TestInsertFixture(t *testing.T) {
	gunit.Run(new(InsertFixture), t)
}

type InsertFixture struct {
	*gunit.Fixture
	t *testing.T // the bubble's
	h *harness
}

// run runs test in a bubble, with a harness over a fresh SQLite database.
func (f *InsertFixture) run(test func()) {
	inBubble(f, func(t *testing.T) {
		f.t = t
		f.h = newHarness(t, openSQLite(t))
		test()
	})
}

func (f *InsertFixture) store() *store { return f.h.processor.(*processor).outbox.store }

// storedOrder is the message ids of the table in id order.
func (f *InsertFixture) storedOrder() []string {
	rows, err := f.h.db.Query("SELECT message_id FROM Messages ORDER BY id")
	f.So(err, should.BeNil)
	defer func() { _ = rows.Close() }()
	var order []string
	for rows.Next() {
		var id string
		f.So(rows.Scan(&id), should.BeNil)
		order = append(order, id)
	}
	return order
}

func numbered(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return ids
}

func (f *InsertFixture) TestSQLiteStoresACommitInBatchesInItsOrderAndReusesTheirStatements() {
	f.run(func() {
		ids := numbered("m", 100) // 38 + 38 + 24 rows
		f.So(f.h.Commit(messages(ids...)...), should.BeNil)
		f.So(f.storedOrder(), should.Equal, ids)
		full, rest := f.store().prepared(sqliteRowsPerInsert), f.store().prepared(100-2*sqliteRowsPerInsert)
		f.So(full, should.NotBeNil)
		f.So(rest, should.NotBeNil)

		more := numbered("n", 100)
		f.So(f.h.Commit(messages(more...)...), should.BeNil)
		f.So(f.store().prepared(sqliteRowsPerInsert), should.Equal, full)
		f.So(f.store().prepared(100-2*sqliteRowsPerInsert), should.Equal, rest)
		f.So(f.storedOrder(), should.Equal, append(ids, more...))
	})
}

func (f *InsertFixture) TestTheRowsOfOneCommitArePublishedInOrderWithTheirOwnIDs() {
	f.run(func() {
		f.h.Listen()
		ids := numbered("m", 90)
		f.So(f.h.Commit(messages(ids...)...), should.BeNil)
		var published []string
		for len(published) < len(ids) {
			for _, d := range f.h.publisher.Next(f.t) {
				published = append(published, d.MessageID)
			}
		}
		f.So(published, should.Equal, ids)
		f.h.monitor.AwaitConfirmed(f.t, len(ids))
		f.h.processor.Close()
		f.h.AwaitStopped()
		// Each row was marked by its own id: the mark matched every row once.
		f.So(f.h.count("dispatched_us IS NOT NULL"), should.Equal, len(ids))
		f.So(strings.Join(f.h.log.Lines(), "\n"), should.NotContainSubstring, "already marked")
	})
}

// A dispatch over a wire limit is refused alone: its Write call fails, the
// other calls' rows are stored by the same multi-row commit.
func (f *InsertFixture) TestARowOverAWireLimitIsRefusedAloneAndTheOthersAreStored() {
	f.run(func() {
		ctx := context.Background()
		connection, err := f.h.connector.Connect(ctx)
		f.So(err, should.BeNil)
		defer func() { _ = connection.Close() }()
		writer, err := connection.CommitWriter(ctx)
		f.So(err, should.BeNil)
		first, second := numbered("a", 50), numbered("b", 50)
		_, err = writer.Write(ctx, messages(first...)...)
		f.So(err, should.BeNil)
		tooLong := message("c-" + strings.Repeat("x", 300))
		_, err = writer.Write(ctx, tooLong)
		f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
		_, err = writer.Write(ctx, messages(second...)...)
		f.So(err, should.BeNil)
		f.So(writer.Commit(), should.BeNil)
		f.So(f.storedOrder(), should.Equal, append(first, second...))
	})
}

// Rows whose payloads together pass maxBytesPerInsert go in more statements;
// a row larger than the bound goes alone.
func (f *InsertFixture) TestLargeRowsSplitTheInsertByBytes() {
	f.run(func() {
		ids := numbered("big", 5)
		dispatches := messages(ids...)
		for i := range dispatches {
			dispatches[i].Payload = make([]byte, maxBytesPerInsert*2/5)
		}
		dispatches[3].Payload = make([]byte, maxBytesPerInsert+1)
		f.So(f.h.Commit(dispatches...), should.BeNil)
		f.So(f.storedOrder(), should.Equal, ids)
		var total int
		f.So(f.h.db.QueryRow("SELECT SUM(LENGTH(payload)) FROM Messages").Scan(&total), should.BeNil)
		f.So(total, should.Equal, 4*(maxBytesPerInsert*2/5)+maxBytesPerInsert+1)
	})
}

func (f *InsertFixture) TestStatementSizesPastTheBoundArePreparedInTheirTransaction() {
	f.run(func() {
		for n := 1; n <= maxInsertShapes+3; n++ {
			f.So(f.h.Commit(messages(numbered(fmt.Sprint("s", n), n)...)...), should.BeNil)
		}
		f.So(len(f.store().inserts), should.Equal, maxInsertShapes)
		f.So(f.store().prepared(maxInsertShapes+2), should.BeNil)
		f.So(f.h.count("1=1"), should.Equal, (maxInsertShapes+3)*(maxInsertShapes+4)/2)
	})
}

func TestMySQLInsertsOneRowPerStatementUntilItKnowsTheIDStep(t *testing.T) {
	s := newStore(nil, sqldialect.MySQL, "Messages")
	if got := s.rowsPerInsert(); got != 1 {
		t.Fatalf("rows per insert before the step is known: %d, want 1", got)
	}
	s.step = 2
	if got := s.rowsPerInsert(); got != maxRowsPerInsert {
		t.Fatalf("rows per insert once the step is known: %d, want %d", got, maxRowsPerInsert)
	}
	if got := newStore(nil, sqldialect.SQLite, "Messages").rowsPerInsert(); got*(columnCount+2) > 999 {
		t.Fatalf("a SQLite insert of %d rows binds %d values, over 999", got, got*(columnCount+2))
	}
}

func TestInsertQueryBindsEveryColumnOfEveryRow(t *testing.T) {
	for _, d := range []sqldialect.Dialect{sqldialect.MySQL, sqldialect.PostgreSQL, sqldialect.SQLite} {
		query := newStore(nil, d, "Messages").insertQuery(3)
		marks := strings.Count(query, "?") + strings.Count(query, "$")
		if marks != 3*(columnCount+2) {
			t.Errorf("%s: %d bound values for 3 rows, want %d", d, marks, 3*(columnCount+2))
		}
		if returning := strings.HasSuffix(query, " RETURNING id"); returning == (d == sqldialect.MySQL) {
			t.Errorf("%s: RETURNING id present %v", d, returning)
		}
		if d == sqldialect.PostgreSQL && !strings.Contains(query, fmt.Sprintf("$%d)", 3*(columnCount+2))) {
			t.Errorf("postgresql: placeholders not numbered to the last value: %s", query)
		}
	}
}
