package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	wmsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	_ "github.com/go-sql-driver/mysql" // the "mysql" driver, for MariaDB
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// perTx is how many messages each outbox transaction commits.
const perTx = 100

// commitTx is the isolation every side commits at: sqlmq's default.
var commitTx = &sql.TxOptions{Isolation: sqlmq.DefaultIsolationLevel}

// outboxTables are the tables of one run of the outbox scenario, each side's
// own, dropped at its end.
type outboxTables struct {
	strong, ours string
	// topic is the watermill forwarder's topic; watermill-sql names its
	// messages and offsets tables after it.
	topic            string
	schema           wmsql.DefaultMySQLSchema
	offsets          wmsql.DefaultMySQLOffsetsAdapter
	db               *sql.DB
	watermillCreated bool
}

func (t *outboxTables) all() []string {
	return []string{t.strong, t.ours, t.schema.MessagesTable(t.topic), t.offsets.MessagesOffsetsTable(t.topic)}
}

// outboxScenario: s.outbox messages committed 100 per MariaDB transaction,
// timed until the broker holds every one of them, three ways: a strong outbox
// written by hand, ours (sqlmq), and watermill-sql with its forwarder
// publishing to watermill-amqp.
func outboxScenario(s settings) scenario {
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	t := &outboxTables{strong: "peers_strong_" + suffix, ours: "peers_outbox_" + suffix, topic: "peers_fwd_" + suffix}
	body := make([]byte, s.size)
	return scenario{
		name:  "outbox",
		setup: func(ctx context.Context) (func(), error) { return t.create(ctx, s) },
		sides: []side{
			{name: "strong-100", role: isBaseline, run: func(ctx context.Context, queue string) (result, error) {
				return strongOutbox(ctx, s, t, queue, body)
			}},
			{name: "ours-100", role: isOurs, run: func(ctx context.Context, queue string) (result, error) {
				return oursOutbox(ctx, s, t, queue, body)
			}},
			{name: "watermill-100", role: isWatermill, run: func(ctx context.Context, queue string) (result, error) {
				return watermillOutbox(ctx, s, t, queue, body)
			}},
		},
	}
}

// create opens the database under the test suite's database lock (held
// shared, so no fault test restarts MariaDB meanwhile) and creates every
// side's tables; the cleanup drops them.
func (t *outboxTables) create(ctx context.Context, s settings) (func(), error) {
	release, err := shareLock(ctx, databaseLockPath)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", s.dsn)
	if err != nil {
		release()
		return nil, fmt.Errorf("the -dsn data source is not valid for the mysql driver: %w", err)
	}
	t.db = db
	cleanup := func() {
		dropCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, table := range t.all() {
			_, _ = db.ExecContext(dropCtx, "DROP TABLE IF EXISTS "+table)
		}
		_ = db.Close()
		release()
	}
	ddl, err := sqlmq.TableSchema(sqldialect.MySQL, t.ours)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("outbox schema: %w", err)
	}
	statements := append(sqlmq.Statements(ddl),
		"CREATE TABLE "+t.strong+" (id bigint unsigned AUTO_INCREMENT NOT NULL PRIMARY KEY, message_id varchar(255) NOT NULL, "+
			"payload longblob NOT NULL, dispatched tinyint(1) NOT NULL DEFAULT 0)",
		"CREATE INDEX ix_"+t.strong+"_pending ON "+t.strong+" (dispatched, id)")
	for _, q := range statements {
		if _, err := db.ExecContext(ctx, q); err != nil {
			cleanup()
			return nil, fmt.Errorf("create the bench tables (is MariaDB up, may the -dsn user CREATE?): %w", err)
		}
	}
	subscriber, err := t.subscriber()
	if err == nil {
		err = subscriber.SubscribeInitialize(t.topic)
	}
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("create watermill-sql's tables: %w", err)
	}
	return cleanup, nil
}

// empty truncates tables, so each run starts from nothing.
func (t *outboxTables) empty(ctx context.Context, tables ...string) error {
	for _, table := range tables {
		if _, err := t.db.ExecContext(ctx, "TRUNCATE TABLE "+table); err != nil {
			return fmt.Errorf("empty table %s: %w", table, err)
		}
	}
	return nil
}

// subscriber is watermill-sql's subscriber with the MySQL schema and offsets
// adapters, polling every 10 ms when it finds nothing (its default is 1 s).
func (t *outboxTables) subscriber() (*wmsql.Subscriber, error) {
	return wmsql.NewSubscriber(wmsql.BeginnerFromStdSQL(t.db), wmsql.SubscriberConfig{
		SchemaAdapter:  t.schema,
		OffsetsAdapter: t.offsets,
		PollInterval:   10 * time.Millisecond,
	}, watermill.NopLogger{})
}

// commitLoop commits s.outbox messages, perTx per call of commit, and returns
// when the broker holds all of them, with the time from start to then.
func commitLoop(ctx context.Context, s settings, queue string, commit func() error) (result, error) {
	start := time.Now()
	for range s.outbox / perTx {
		if err := commit(); err != nil {
			return result{}, err
		}
	}
	want := s.outbox / perTx * perTx
	if err := waitDepth(ctx, s.url, queue, want); err != nil {
		return result{}, err
	}
	return result{msgs: want, elapsed: time.Since(start)}, nil
}

// waitDepth polls the queue's depth until it holds want messages.
func waitDepth(ctx context.Context, url, queue string, want int) error {
	return onChannel(url, func(ch *amqp.Channel) error {
		for {
			q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
			if err != nil {
				return fmt.Errorf("poll the depth of queue %s: %w", queue, err)
			}
			if q.Messages >= want {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the broker held %d of %d committed messages: %w", q.Messages, want, ctx.Err())
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
}

// strongOutbox is the strongest outbox written by hand, as `make bench` runs
// outbox/strong-100: one multi-row INSERT per transaction, prepared once, and
// a relay beside the commits that reads a page of unpublished rows, publishes
// it with pipelined confirms and marks it with one UPDATE. It carries none of
// sqlmq's envelope, leases or per-row failure handling.
func strongOutbox(ctx context.Context, s settings, t *outboxTables, queue string, body []byte) (result, error) {
	if err := t.empty(ctx, t.strong); err != nil {
		return result{}, err
	}
	conn, ch, err := open(s.url, true)
	if err != nil {
		return result{}, err
	}
	defer conn.Close()
	insert, err := t.db.PrepareContext(ctx, "INSERT INTO "+t.strong+" (message_id, payload) VALUES "+
		strings.TrimSuffix(strings.Repeat("(?, ?),", perTx), ","))
	if err != nil {
		return result{}, fmt.Errorf("prepare the insert: %w", err)
	}
	defer insert.Close()
	relayCtx, stopRelay := context.WithCancel(ctx)
	relayed := make(chan error, 1)
	go func() { relayed <- relay(relayCtx, t.db, ch, t.strong, queue) }()
	defer func() {
		stopRelay()
		<-relayed // the relay returns once its context ends
	}()
	args := make([]any, 0, 2*perTx)
	return commitLoop(ctx, s, queue, func() error {
		args = args[:0]
		for range perTx {
			args = append(args, messaging.NewID(), body)
		}
		tx, err := t.db.BeginTx(ctx, commitTx)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if _, err := tx.StmtContext(ctx, insert).ExecContext(ctx, args...); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("insert: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
}

// relay publishes the strong outbox's rows until ctx ends, a page of up to
// 500 at a time in id order, sleeping a millisecond when it finds none.
func relay(ctx context.Context, db *sql.DB, ch *amqp.Channel, table, queue string) error {
	read := "SELECT id, message_id, payload FROM " + table + " WHERE dispatched = 0 ORDER BY id LIMIT 500"
	for ctx.Err() == nil {
		ids, pending, err := publishPage(ctx, db, ch, read, queue)
		if err == nil && len(ids) > 0 {
			err = confirmed(ctx, pending)
		}
		if err == nil && len(ids) > 0 {
			marks := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
			_, err = db.ExecContext(ctx, "UPDATE "+table+" SET dispatched = 1 WHERE id IN ("+marks+")", ids...)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("strong relay: %w", err)
		}
		if len(ids) == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Millisecond):
			}
		}
	}
	return nil
}

// publishPage reads one page and publishes its rows, returning their ids and
// the confirms to wait for.
func publishPage(ctx context.Context, db *sql.DB, ch *amqp.Channel, read, queue string) ([]any, []*amqp.DeferredConfirmation, error) {
	rows, err := db.QueryContext(ctx, read)
	if err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	var ids []any
	var pending []*amqp.DeferredConfirmation
	for rows.Next() {
		var id int64
		var messageID string
		var payload []byte
		if err := rows.Scan(&id, &messageID, &payload); err != nil {
			_ = rows.Close()
			return nil, nil, fmt.Errorf("scan: %w", err)
		}
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
			DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream", MessageId: messageID, Body: payload,
		})
		if err != nil {
			_ = rows.Close()
			return nil, nil, fmt.Errorf("publish: %w", err)
		}
		ids, pending = append(ids, id), append(pending, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	return ids, pending, nil
}

// oursOutbox commits through the sqlmq outbox, 100 dispatches per
// CommitWriter commit, with its dispatcher publishing to the rabbitmq
// transport, as `make bench` runs outbox/ours-100.
func oursOutbox(ctx context.Context, s settings, t *outboxTables, queue string, body []byte) (result, error) {
	if err := t.empty(ctx, t.ours); err != nil {
		return result{}, err
	}
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url), rabbitmq.Options.MaxOutstandingPublishes(s.window))
	defer transport.Close()
	outbox, dispatcher := sqlmq.New(transport,
		sqlmq.Options.StorageHandle(t.db),
		sqlmq.Options.Table(t.ours),
		sqlmq.Options.ShutdownTimeout(10*time.Second))
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		dispatcher.Listen()
	}()
	defer func() {
		_ = dispatcher.Close()
		<-listening // Close is bounded by the shutdown timeout
	}()
	connection, err := outbox.Connect(ctx)
	if err != nil {
		return result{}, fmt.Errorf("outbox: connect: %w", err)
	}
	defer connection.Close()
	dispatches := make([]messaging.Dispatch, perTx)
	for i := range dispatches {
		dispatches[i] = messaging.Dispatch{RoutingKey: queue, Mandatory: true, ContentType: "application/octet-stream", Payload: body}
	}
	return commitLoop(ctx, s, queue, func() error {
		writer, err := connection.CommitWriter(ctx)
		if err != nil {
			return fmt.Errorf("outbox: begin: %w", err)
		}
		if _, err := writer.Write(ctx, dispatches...); err != nil {
			_ = writer.Rollback()
			return fmt.Errorf("outbox: write: %w", err)
		}
		if err := writer.Commit(); err != nil {
			return fmt.Errorf("outbox: commit: %w", err)
		}
		return nil
	})
}

// watermillOutbox is watermill's outbox: in each transaction a watermill-sql
// publisher on the transaction, wrapped by the forwarder's publisher, stores
// 100 enveloped messages; the forwarder reads them with a watermill-sql
// subscriber and publishes them with watermill-amqp, confirms on.
func watermillOutbox(ctx context.Context, s settings, t *outboxTables, queue string, body []byte) (result, error) {
	if err := t.empty(ctx, t.schema.MessagesTable(t.topic), t.offsets.MessagesOffsetsTable(t.topic)); err != nil {
		return result{}, err
	}
	subscriber, err := t.subscriber()
	if err != nil {
		return result{}, fmt.Errorf("watermill-sql subscriber: %w", err)
	}
	publisher, err := wmamqp.NewPublisher(watermillConfig(s.url, 1, 0), watermill.NopLogger{})
	if err != nil {
		return result{}, fmt.Errorf("watermill-amqp publisher: %w", err)
	}
	fwd, err := forwarder.NewForwarder(subscriber, publisher, watermill.NopLogger{},
		forwarder.Config{ForwarderTopic: t.topic, CloseTimeout: 10 * time.Second})
	if err != nil {
		_ = publisher.Close()
		return result{}, fmt.Errorf("watermill forwarder: %w", err)
	}
	running := make(chan error, 1)
	go func() { running <- fwd.Run(ctx) }()
	defer func() {
		_ = fwd.Close() // bounded by CloseTimeout; closes the subscriber
		<-running
		_ = publisher.Close()
	}()
	select {
	case <-fwd.Running():
	case err := <-running:
		running <- err
		return result{}, fmt.Errorf("watermill forwarder stopped before it ran: %w", err)
	case <-ctx.Done():
		return result{}, fmt.Errorf("watermill forwarder did not start: %w", ctx.Err())
	}
	return commitLoop(ctx, s, queue, func() error {
		tx, err := t.db.BeginTx(ctx, commitTx)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		stored, err := wmsql.NewPublisher(wmsql.TxFromStdSQL(tx), wmsql.PublisherConfig{SchemaAdapter: t.schema}, watermill.NopLogger{})
		if err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("watermill-sql publisher: %w", err)
		}
		messages := make([]*message.Message, perTx)
		for i := range messages {
			messages[i] = message.NewMessage(watermill.NewUUID(), body)
			messages[i].SetContext(ctx)
		}
		if err := forwarder.NewPublisher(stored, forwarder.PublisherConfig{ForwarderTopic: t.topic}).Publish(queue, messages...); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("watermill publish in the transaction: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
}
