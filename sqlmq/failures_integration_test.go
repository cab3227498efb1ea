package sqlmq

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

// A queue that is full and rejects publishes (here: x-max-length 0 with
// x-overflow reject-publish, so the broker nacks every publish to it) must not
// hold a row for ever without a signal: each nack is counted, the last error
// kept in the row, the row retired when its budget is spent, and the rows
// behind it publish meanwhile.
func TestIntegrationARowTheBrokerNacksForEverIsCountedAndRetired(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		mq := newBroker(t) // the broker lock before the database's
		db := b.open(t)
		table := outboxTable(t, b, db)
		good := mq.exchange("good")
		received := mq.consume(mq.queue("good", good))
		full := mq.exchange("full")
		mq.queueWith("full", full, amqp.Table{"x-max-length": 0, "x-overflow": "reject-publish"})
		outbox := newInstance(t, b, db, table, Options.RetryPolicy(retrypolicy.Fixed(3, 50*time.Millisecond)))
		monitor := outbox.monitor
		outbox.listen(t)

		nacked := dispatchesTo(full, messageIDs("nacked", 1)...)
		later := messageIDs("later", 5)
		outbox.commit(t, append(nacked, dispatchesTo(good, later...)...)...)
		received.await(later...)
		monitor.Await(t, bound, "the nacked row retired", func(_, _, _, retired int) bool { return retired == 1 })

		admin := NewAdmin(db, Options.Dialect(b.dialect), Options.Table(table))
		retired, err := admin.Retired(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(retired) != 1 || retired[0].MessageID != nacked[0].MessageID {
			t.Fatalf("retired %+v; want the one row sent to the full queue", retired)
		}
		if retired[0].Attempts != 3 || !strings.Contains(retired[0].LastError, "basic.nack") {
			t.Errorf("retired after %d attempt(s) with %q; want 3 and the broker's nack", retired[0].Attempts, retired[0].LastError)
		}
		_, _, confirmed, _ := monitor.counts()
		if confirmed != len(later) {
			t.Errorf("%d rows confirmed; want the %d behind the nacked one", confirmed, len(later))
		}
	})
}

// Publishing mandatory is the default: a row nothing is bound to stays in the
// outbox and is retired with a line that says what happened and what to do.
// An exchange named in DropUnroutable may drop such a row: it is published
// without mandatory, confirmed and marked dispatched.
func TestIntegrationOnlyAnExchangeNamedToDropUnroutableRowsLetsThemGo(t *testing.T) {
	b := backends[0] // MariaDB
	mq := newBroker(t)
	db := b.open(t)
	table := outboxTable(t, b, db)
	unbound, optional := mq.exchange("unbound"), mq.exchange("optional")
	log := newLogRecorder()
	outbox := newInstance(t, b, db, table, Options.Logger(slog.New(log)),
		Options.DropUnroutable(optional), Options.RetryPolicy(retrypolicy.Fixed(2, 50*time.Millisecond)))
	monitor := outbox.monitor
	outbox.listen(t)

	kept := dispatchesTo(unbound, "kept-"+messaging.NewID())
	dropped := dispatchesTo(optional, "dropped-"+messaging.NewID())
	outbox.commit(t, append(kept, dropped...)...)
	monitor.Await(t, bound, "one row dropped by the broker and one retired", func(_, _, confirmed, retired int) bool {
		return confirmed == 1 && retired == 1
	})
	var dispatched string
	if err := db.QueryRow("SELECT message_id FROM " + table + " WHERE dispatched_us IS NOT NULL").Scan(&dispatched); err != nil || dispatched != dropped[0].MessageID {
		t.Fatalf("dispatched %q (%v); want the row of the exchange named in DropUnroutable", dispatched, err)
	}
	line := log.Await(t, "Retired message")
	for _, says := range []string{`no queue is bound to exchange "` + unbound + `"`, "warrenmq outbox release -table " + table} {
		if !strings.Contains(line, says) {
			t.Errorf("the retirement line does not say %q:\n%s", says, line)
		}
	}
}
