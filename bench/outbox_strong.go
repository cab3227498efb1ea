package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

// strongPage is how many rows the hand-written relay reads, publishes and
// marks at a time: the outbox's own page size.
const strongPage = 500

// strongPoll is how long the hand-written relay sleeps when it finds nothing
// to publish.
const strongPoll = time.Millisecond

// createStrongTable creates the table of the strong baseline: what a careful
// hand-written outbox keeps (an id, a message id, the payload, whether it was
// published) with an index for its relay's query.
func createStrongTable(ctx context.Context, db *sql.DB, table string) error {
	statements := []string{
		"CREATE TABLE " + table + " (id bigint unsigned AUTO_INCREMENT NOT NULL PRIMARY KEY, message_id varchar(255) NOT NULL, " +
			"payload longblob NOT NULL, dispatched tinyint(1) NOT NULL DEFAULT 0)",
		"CREATE INDEX ix_" + table + "_pending ON " + table + " (dispatched, id)",
	}
	for _, statement := range statements {
		if _, err := db.ExecContext(ctx, statement); err != nil {
			return fmt.Errorf("create the strong baseline's table (does the -dsn user have CREATE rights?): %w", err)
		}
	}
	return nil
}

// outboxRun is one run of an outbox side, with what the scenario's summary
// reports beside the rate.
type outboxRun struct {
	measurement
	// commitRate is messages committed per second while committing.
	commitRate float64
	// tail is how long after the last commit the broker held the last message.
	tail time.Duration
}

// strongOutbox is the strongest outbox written by hand: a relay runs beside
// the committing loop (it polls the table, publishes a page with pipelined
// confirms and marks it published), and every commit inserts its perTx rows
// with one multi-row INSERT prepared once. It gives up what sqlmq keeps (the
// envelope, leases for several instances, a failing row set aside alone,
// attempts and errors recorded, order under a broker outage), so it is the
// bound to measure against. Timed like ours: until the broker holds every
// committed message.
//
// With envelope set, the relay publishes each message with the properties
// and x-acemq-* headers our transport writes, so the cost of the wire
// contract can be told apart from the cost of our outbox.
func strongOutbox(ctx context.Context, s settings, db *sql.DB, table, queue string, body []byte, perTx int, envelope bool) (outboxRun, error) {
	if err := truncate(ctx, db, table); err != nil {
		return outboxRun{}, err
	}
	conn, err := amqp.Dial(s.url)
	if err != nil {
		return outboxRun{}, fmt.Errorf("strong outbox: cannot reach RabbitMQ: %w; `make services` starts it", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return outboxRun{}, fmt.Errorf("strong outbox: channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return outboxRun{}, fmt.Errorf("strong outbox: confirm mode: %w", err)
	}
	insert, err := db.PrepareContext(ctx, "INSERT INTO "+table+" (message_id, payload) VALUES "+
		strings.TrimSuffix(strings.Repeat("(?, ?),", perTx), ","))
	if err != nil {
		return outboxRun{}, fmt.Errorf("strong outbox: prepare the insert: %w", err)
	}
	defer insert.Close()

	relayCtx, stopRelay := context.WithCancel(ctx)
	defer stopRelay()
	var relayed atomic.Int64
	relayDone := make(chan error, 1)
	go func() { relayDone <- strongRelay(relayCtx, db, ch, table, queue, s.window, envelope, &relayed) }()

	args := make([]any, 2*perTx)
	watch := startWatch()
	deadline := watch.start.Add(s.duration)
	commits := 0
	for time.Now().Before(deadline) {
		for i := range perTx {
			args[2*i], args[2*i+1] = messaging.NewID(), body
		}
		if err := commitStrong(ctx, db, insert, args); err != nil {
			return outboxRun{measurement: watch.stop(commits * perTx)}, err
		}
		commits++
	}
	committed := watch.stop(commits)
	lastCommit := time.Now()
	arrived, err := waitDepth(ctx, s.url, queue, commits*perTx, outboxDrainLimit)
	stopRelay()
	relayErr := <-relayDone
	if err != nil {
		return outboxRun{measurement: committed}, fmt.Errorf("strong outbox: %w (relay: %v)", err, relayErr)
	}
	if relayErr != nil {
		return outboxRun{measurement: committed}, relayErr
	}
	return shapeOutboxRun(committed, watch.start, lastCommit, arrived, perTx, 0), nil
}

// shapeOutboxRun turns a timed commit loop into the side's measurement: with
// one message per transaction, commits per second (the point of an outbox is
// not to slow the committing service); otherwise messages per second until
// the broker held the last one.
func shapeOutboxRun(committed measurement, start, lastCommit, arrived time.Time, perTx, batches int) outboxRun {
	commits := committed.msgs
	run := outboxRun{
		commitRate: float64(commits*perTx) / committed.elapsed.Seconds(),
		tail:       arrived.Sub(lastCommit),
	}
	if perTx == 1 {
		run.measurement = committed
	} else {
		run.measurement = measurement{msgs: commits * perTx, elapsed: arrived.Sub(start), mallocs: committed.mallocs}
	}
	run.lag, run.batches = run.tail, batches
	return run
}

func commitStrong(ctx context.Context, db *sql.DB, insert *sql.Stmt, args []any) error {
	tx, err := db.BeginTx(ctx, benchTx)
	if err != nil {
		return fmt.Errorf("strong outbox: begin: %w", err)
	}
	if _, err := tx.StmtContext(ctx, insert).ExecContext(ctx, args...); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("strong outbox: insert: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("strong outbox: commit: %w", err)
	}
	return nil
}

// strongRelay publishes what the table holds until ctx ends: a page of
// unpublished rows in id order, every publish pipelined on one confirm-mode
// channel (at most window unconfirmed), then one UPDATE marking the page.
func strongRelay(ctx context.Context, db *sql.DB, ch *amqp.Channel, table, queue string, window int, envelope bool, relayed *atomic.Int64) error {
	query := "SELECT id, message_id, payload FROM " + table + " WHERE dispatched = 0 ORDER BY id LIMIT " + fmt.Sprint(strongPage)
	ids := make([]any, 0, strongPage)
	pending := make([]*amqp.DeferredConfirmation, 0, window)
	for ctx.Err() == nil {
		rows, err := db.QueryContext(ctx, query)
		if err != nil {
			return relayEnded(ctx, "read", err)
		}
		ids = ids[:0]
		pending = pending[:0]
		for rows.Next() {
			var id int64
			var messageID string
			var payload []byte
			if err := rows.Scan(&id, &messageID, &payload); err != nil {
				_ = rows.Close()
				return relayEnded(ctx, "scan", err)
			}
			if len(pending) == window {
				if err := waitAll(ctx, pending); err != nil {
					_ = rows.Close()
					return relayEnded(ctx, "confirm", err)
				}
				pending = pending[:0]
			}
			publishing := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream", MessageId: messageID, Body: payload}
			if envelope {
				addEnvelope(&publishing, messageID, queue)
			}
			c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, publishing)
			if err != nil {
				_ = rows.Close()
				return relayEnded(ctx, "publish", err)
			}
			pending = append(pending, c)
			ids = append(ids, id)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return relayEnded(ctx, "read", err)
		}
		if len(ids) == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(strongPoll):
			}
			continue
		}
		if err := waitAll(ctx, pending); err != nil {
			return relayEnded(ctx, "confirm", err)
		}
		if _, err := db.ExecContext(ctx, "UPDATE "+table+" SET dispatched = 1 WHERE id IN ("+
			strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")+")", ids...); err != nil {
			return relayEnded(ctx, "mark", err)
		}
		relayed.Add(int64(len(ids)))
	}
	return nil
}

func waitAll(ctx context.Context, pending []*amqp.DeferredConfirmation) error {
	for _, c := range pending {
		if err := waitConfirm(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// relayEnded is nil when the relay stopped because the run is over.
func relayEnded(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("strong outbox relay: %s: %w", step, err)
}
