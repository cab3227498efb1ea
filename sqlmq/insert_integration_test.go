package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/sqldialect"
)

// Commits of several rows from concurrent transactions: every id the
// multi-row INSERT reports is the id of that very row, on every dialect.
func TestIntegrationMultiRowInsertsReportEachRowsOwnID(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db := b.open(t)
		table := outboxTable(t, b, db)
		s := newStore(db, b.dialect, table)
		t.Cleanup(func() { _ = s.close() })
		ctx := context.Background()
		s.prepareInsert(ctx)
		const committers, commits, rows = 4, 5, 60
		var mu sync.Mutex
		reported := map[int64]string{}
		var wg sync.WaitGroup
		errs := make(chan error, committers*commits)
		for c := range committers {
			wg.Go(func() {
				for n := range commits {
					dispatches := make([]messaging.Dispatch, rows)
					for i := range dispatches {
						d, err := normalize(message(fmt.Sprintf("c%d-t%d-r%02d", c, n, i)), time.Now())
						if err != nil {
							errs <- err
							return
						}
						dispatches[i] = d
					}
					ids, err := insertCommitted(ctx, db, b.dialect, s, dispatches)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					for i, id := range ids {
						reported[id] = dispatches[i].MessageID
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(reported) != committers*commits*rows {
			t.Fatalf("%d distinct ids reported for %d rows", len(reported), committers*commits*rows)
		}
		stored, err := db.Query("SELECT id, message_id FROM " + table)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = stored.Close() }()
		count := 0
		for stored.Next() {
			var id int64
			var messageID string
			if err := stored.Scan(&id, &messageID); err != nil {
				t.Fatal(err)
			}
			if reported[id] != messageID {
				t.Errorf("row %d holds %s, but its insert reported it for %q", id, messageID, reported[id])
			}
			count++
		}
		if err := stored.Err(); err != nil {
			t.Fatal(err)
		}
		if count != len(reported) {
			t.Fatalf("%d rows stored, %d reported", count, len(reported))
		}
	})
}

func insertCommitted(ctx context.Context, db *sql.DB, d sqldialect.Dialect, s *store, dispatches []messaging.Dispatch) ([]int64, error) {
	tx, err := db.BeginTx(ctx, d.TxOptions(DefaultIsolationLevel))
	if err != nil {
		return nil, err
	}
	ids, _, err := s.insert(ctx, tx, true, dispatches, time.Now(), "test-owner", time.Now().Add(time.Hour))
	if err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return ids, tx.Commit()
}

// A thousand messages committed in transactions of 1 to 100 rows by
// concurrent committers, with the relay running: each arrives exactly once,
// counted by id, and every row ends marked dispatched.
func TestIntegrationAThousandRowsAcrossMultiRowCommitsArriveExactlyOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		mq := newBroker(t) // the broker lock before the database's
		db := b.open(t)
		table := outboxTable(t, b, db)
		exchange := mq.exchange("multirow")
		received := mq.consume(mq.queue("multirow", exchange))
		outbox := newInstance(t, b, db, table, Options.ChannelBufferCapacity(64))
		outbox.listen(t)

		all := messageIDs("multirow", 1000)
		sizes := []int{1, 100, 37, 2, 99, 61, 38, 39, 76, 1, 50, 100, 3}
		var batches [][]string
		for first, i := 0, 0; first < len(all); i++ {
			size := min(sizes[i%len(sizes)], len(all)-first)
			batches = append(batches, all[first:first+size])
			first += size
		}
		var wg sync.WaitGroup
		const committers = 3
		errs := make(chan error, committers)
		for c := range committers {
			wg.Go(func() {
				for i := c; i < len(batches); i += committers {
					if err := commitAll(outbox.connector, dispatchesTo(exchange, batches[i]...)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		received.awaitArrival(db, table, all...)
		awaitDispatched(t, db, table, len(all), outbox)
		outbox.stop(t)
		_, count := received.snapshot()
		for _, id := range all {
			if count[id] != 1 {
				t.Errorf("message %s arrived %d times", id, count[id])
			}
		}
		if len(count) != len(all) {
			t.Errorf("%d distinct messages arrived, %d committed", len(count), len(all))
		}
		for id, n := range count {
			if payload := string(received.delivery(id).Body); payload != id {
				t.Errorf("message %s arrived with the payload of %s (%d times)", id, payload, n)
			}
		}
	})
}

// commitAll writes dispatches in one transaction and commits it; unlike
// instance.commit it may run on any goroutine.
func commitAll(connector messaging.Connector, dispatches []messaging.Dispatch) error {
	ctx := context.Background()
	conn, err := connector.Connect(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	writer, err := conn.CommitWriter(ctx)
	if err != nil {
		return err
	}
	if _, err := writer.Write(ctx, dispatches...); err != nil {
		_ = writer.Rollback()
		return err
	}
	return writer.Commit()
}
