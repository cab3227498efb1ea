package sqlmq

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/sqldialect"
)

func TestIntegrationRollbackLeavesNothingAndCommitPublishesOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		mq := newBroker(t) // the broker lock before the database's
		db := b.open(t)
		table := outboxTable(t, b, db)
		business := "business_" + table
		if _, err := db.Exec("CREATE TABLE " + business + " (id INTEGER NOT NULL)"); err != nil {
			t.Fatalf("create the business table: %v", err)
		}
		t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + business) })
		exchange := mq.exchange("outbox")
		received := mq.consume(mq.queue("outbox", exchange))
		outbox := newInstance(t, b, db, table)
		outbox.listen(t)

		ctx, slot := messaging.WithTransactionSlot(context.Background())
		conn, err := outbox.connector.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close() }()
		writer, err := conn.CommitWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := slot.Tx.Exec("INSERT INTO " + business + " (id) VALUES (1)"); err != nil {
			t.Fatalf("insert the business row in the outbox transaction: %v", err)
		}
		rolledBack := dispatchesTo(exchange, "rolled-back-"+messaging.NewID())
		if _, err := writer.Write(ctx, rolledBack...); err != nil {
			t.Fatal(err)
		}
		if err := writer.Rollback(); err != nil {
			t.Fatal(err)
		}

		committed := messageIDs("committed", 20)
		outbox.commit(t, dispatchesTo(exchange, committed...)...)
		marker := messageIDs("marker", 1)
		outbox.commit(t, dispatchesTo(exchange, marker...)...)
		received.await(marker...)

		order, count := received.snapshot()
		if want := append(append([]string(nil), committed...), marker...); !reflect.DeepEqual(order, want) {
			t.Fatalf("received %v, want exactly %v in commit order", order, want)
		}
		for id, n := range count {
			if n != 1 {
				t.Errorf("message %s arrived %d times", id, n)
			}
		}
		var rows int
		_ = db.QueryRow("SELECT COUNT(*) FROM " + business).Scan(&rows)
		if rows != 0 {
			t.Errorf("the rolled-back business row is in the table")
		}
		_ = db.QueryRow("SELECT COUNT(*) FROM " + table + " WHERE message_id = '" + rolledBack[0].MessageID + "'").Scan(&rows)
		if rows != 0 {
			t.Errorf("the rolled-back message is in the outbox table")
		}
		awaitDispatched(t, db, table, len(committed)+1, outbox)
	})
}

func TestIntegrationARecoveredRowPublishesWhatTheLivePathPublished(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		mq := newBroker(t) // the broker lock before the database's
		db := b.open(t)
		table := outboxTable(t, b, db)
		exchange := mq.exchange("identity")
		received := mq.consume(mq.queue("identity", exchange))

		live := newInstance(t, b, db, table)
		live.listen(t)
		d := fullDispatch()
		d.Topic, d.MessageID = exchange, "identity-"+messaging.NewID()
		d.Expiration = time.Hour
		live.commit(t, d)
		received.await(d.MessageID)
		awaitDispatched(t, db, table, 1, live)
		first := received.delivery(d.MessageID)
		live.stop(t)

		if _, err := db.Exec("UPDATE " + table + " SET dispatched_us = NULL, lease_owner = NULL, lease_until_us = NULL"); err != nil {
			t.Fatal(err)
		}
		recovered := newInstance(t, b, db, table)
		recovered.listen(t)
		awaitProgress(t, "the recovered row published again", func() (bool, string) {
			_, count := received.snapshot()
			return count[d.MessageID] >= 2, fmt.Sprintf("delivered %d time(s)", count[d.MessageID])
		}, received.changes)
		second := received.delivery(d.MessageID)
		if !reflect.DeepEqual(delivered(second), delivered(first)) {
			t.Fatalf("the recovered row published\n%#v\nthe live path published\n%#v", delivered(second), delivered(first))
		}
	})
}

// delivered is what a delivery carries that the publisher decided.
func delivered(d amqp.Delivery) map[string]any {
	return map[string]any{
		"headers": d.Headers, "content-type": d.ContentType, "content-encoding": d.ContentEncoding,
		"delivery-mode": d.DeliveryMode, "priority": d.Priority, "correlation-id": d.CorrelationId, "reply-to": d.ReplyTo,
		"expiration": d.Expiration, "message-id": d.MessageId, "timestamp": d.Timestamp, "type": d.Type,
		"app-id": d.AppId, "user-id": d.UserId, "exchange": d.Exchange, "routing-key": d.RoutingKey, "body": string(d.Body),
	}
}

func TestIntegrationTwoProcessorsOnOneTablePublishEachRowOnceAndCoverForADeadOne(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		mq := newBroker(t) // the broker lock before the database's
		db := b.open(t)
		table := outboxTable(t, b, db)
		exchange := mq.exchange("pair")
		received := mq.consume(mq.queue("pair", exchange))
		// The live instances hold their rows for long and sweep often; the one
		// that dies holds its rows for a second.
		const lease, sweep = time.Second, 250 * time.Millisecond
		first := newInstance(t, b, db, table, Options.SweepInterval(sweep), Options.InstanceName("first-"+table))
		second := newInstance(t, b, db, table, Options.SweepInterval(sweep), Options.InstanceName("second-"+table))
		first.listen(t)
		second.listen(t)

		total := 10000
		if b.dialect == sqldialect.SQLite {
			total = 2000 // one writer at a time: the slowest of the three
		}
		all := messageIDs("pair", total)
		random := rand.New(rand.NewPCG(1, 2))
		for start, turn := 0, 0; start < len(all); turn++ {
			size := min(1+random.IntN(100), len(all)-start)
			writer := []*instance{first, second}[turn%2]
			writer.commit(t, dispatchesTo(exchange, all[start:start+size]...)...)
			start += size
		}
		received.awaitArrival(db, table, all...)

		// An instance that commits and dies before publishing: nobody restarts it.
		dead := newInstance(t, b, db, table, Options.LeaseTimeout(lease), Options.InstanceName("dead-"+table))
		orphans := messageIDs("orphan", 50)
		dead.commit(t, dispatchesTo(exchange, orphans...)...)
		committed := time.Now()
		received.await(orphans...)
		if took := time.Since(committed); took > lease+sweep+2*time.Second {
			t.Errorf("the dead instance's rows took %s to publish; the bound is the lease (%s) plus the sweep interval (%s)", took, lease, sweep)
		}

		awaitDispatched(t, db, table, len(all)+len(orphans), first, second, dead)
		_, count := received.snapshot()
		duplicates := 0
		for _, id := range append(append([]string(nil), all...), orphans...) {
			duplicates += count[id] - 1
		}
		t.Logf("%s: %d messages from two processors and a dead instance, %d duplicate(s)", b.name, len(all)+len(orphans), duplicates)
		if duplicates != 0 {
			t.Errorf("%d duplicate(s) in the normal flow; want 0", duplicates)
		}
	})
}

func TestIntegrationARowTheBrokerWillNeverTakeIsRetiredWhileLaterRowsPublish(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		mq := newBroker(t) // the broker lock before the database's
		db := b.open(t)
		table := outboxTable(t, b, db)
		exchange := mq.exchange("good")
		received := mq.consume(mq.queue("good", exchange))
		unbound := mq.exchange("unbound")
		outbox := newInstance(t, b, db, table, Options.RetryPolicy(retrypolicy.Fixed(3, 50*time.Millisecond)))
		outbox.listen(t)

		nowhere := dispatchesTo(unbound, "unroutable-"+messaging.NewID())
		missing := dispatchesTo(fmt.Sprintf("warrenmq-test-missing-%s", messaging.NewID()[:8]), "missing-"+messaging.NewID())
		later := messageIDs("later", 5)
		outbox.commit(t, append(append(nowhere, missing...), dispatchesTo(exchange, later...)...)...)
		received.await(later...)

		outbox.monitor.Await(t, patience, "the 2 rows retired", func(_, _, _, retired int) bool { return retired == 2 })
		retired, err := NewAdmin(db, Options.Dialect(b.dialect), Options.Table(table)).Retired(context.Background(), 10)
		if err != nil || len(retired) != 2 {
			t.Fatalf("Admin.Retired: %d row(s), %v; want 2", len(retired), err)
		}
		for _, r := range retired {
			if r.Attempts != 3 || r.LastError == "" {
				t.Errorf("retired %s after %d attempts with error %q; want 3 attempts and the broker's reason", r.MessageID, r.Attempts, r.LastError)
			}
		}
		if retired[0].MessageID != nowhere[0].MessageID || retired[1].MessageID != missing[0].MessageID {
			t.Errorf("retired %s and %s; want %s and %s", retired[0].MessageID, retired[1].MessageID, nowhere[0].MessageID, missing[0].MessageID)
		}
		var total int
		_ = db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&total)
		if total != 2+len(later) {
			t.Errorf("the table holds %d rows; retired rows must be kept", total)
		}
	})
}
