package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/sqltx"
	"github.com/warrenmq/messaging/patterns/idempotency"
	"github.com/warrenmq/messaging/patterns/ordering"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

// patternsScenario: the cost of the consumer patterns, each beside the same
// consumer without it in the same run. idempotency-sql-1 claims and confirms
// every message in MariaDB (batch 1, one worker: the worst case, two
// autocommitted statements per message against a handler that does
// nothing). The -8 sides run 8 workers on batches of up to patternsBatch:
// idempotency-sql-8 is the guard (one claim and one confirm statement per
// batch, each its own commit) around a handler that does nothing, against
// sqltx-8, a handler that inserts one row per message in one transaction per
// batch (one commit per batch, the least a durable consumer pays);
// sqltx-idempotent-8 is sqltx-8 with the claims written in its transaction
// (idempotency.InTransaction); sqltx-rows-8 is sqltx-8 writing the same rows
// by hand (one prepared multi-row INSERT per batch into a table of the same
// shape), the floor of any guard that records its keys in the transaction.
// ordering-8 keeps per-key order across 8
// workers with every message its own key (the many-keys case).
func patternsScenario(s settings) scenario {
	body, _ := json.Marshal(benchMessage{Data: strings.Repeat("x", max(0, s.size-12))})
	limit := 2 * time.Minute
	batchOne := streaming.SubscriptionOptions.BatchCapacity(1)
	return scenario{name: "patterns", setup: holdDatabases, sides: []side{
		{name: "plain-1", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeWith(ctx, s, queue, body, limit, 1, nil, batchOne)
		}},
		{name: "idempotency-sql-1", baseline: "plain-1", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeIdempotent(ctx, s, queue, body, limit, 1, 1)
		}},
		{name: "sqltx-1", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeTransactional(ctx, s, queue, body, limit, 1, 1, withoutGuard)
		}},
		{name: "sqltx-idempotent-1", baseline: "sqltx-1", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeTransactional(ctx, s, queue, body, limit, 1, 1, withClaims)
		}},
		{name: "sqltx-8", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeTransactional(ctx, s, queue, body, limit, 8, patternsBatch, withoutGuard)
		}},
		{name: "idempotency-sql-8", baseline: "sqltx-8", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeIdempotent(ctx, s, queue, body, limit, 8, patternsBatch)
		}},
		{name: "sqltx-idempotent-8", baseline: "sqltx-8", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeTransactional(ctx, s, queue, body, limit, 8, patternsBatch, withClaims)
		}},
		{name: "sqltx-rows-8", baseline: "sqltx-8", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeTransactional(ctx, s, queue, body, limit, 8, patternsBatch, withRows)
		}},
		{name: "plain-8", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeWith(ctx, s, queue, body, limit, 8, nil, batchOne)
		}},
		{name: "ordering-8", baseline: "plain-8", run: func(ctx context.Context, queue string) (measurement, error) {
			byID := ordering.Key(func(_ any, d messaging.Delivery) string { return d.MessageID })
			return consumeWith(ctx, s, queue, body, limit, 8, ordering.Middleware(byID), batchOne)
		}},
	}}
}

// holdDatabases takes the test suite's database lock, shared, for the
// scenario: a fault test that restarts MariaDB waits for the run to end
// instead of failing it halfway.
func holdDatabases(context.Context) (func(), error) { return shareLock(databaseLockPath) }

// patternsBatch is the batch capacity of the -8 SQL sides.
const patternsBatch = 16

// consumeIdempotent is consumeWith over a fresh MariaDB claim table (dropped
// after the run, so every round claims every message anew).
func consumeIdempotent(ctx context.Context, s settings, queue string, body []byte, limit time.Duration, workers int, batch uint16) (measurement, error) {
	db, err := openDatabase(ctx, s.dsn)
	if err != nil {
		return measurement{}, err
	}
	defer db.Close()
	const table = "bench_idempotency"
	store, err := idempotency.NewSQLStore(db, sqldialect.MySQL, idempotency.StoreOptions.Table(table))
	if err != nil {
		return measurement{}, err
	}
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
		return measurement{}, err
	}
	for _, statement := range sqlmq.Statements(store.Schema()) {
		if _, err := db.ExecContext(ctx, statement); err != nil {
			return measurement{}, fmt.Errorf("create %s: %w", table, err)
		}
	}
	defer func() { _, _ = db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+table) }()
	return consumeWith(ctx, s, queue, body, limit, workers, idempotency.Middleware(store), streaming.SubscriptionOptions.BatchCapacity(batch))
}

// consumeTransactional is a consumer whose handler does what a real one does,
// one INSERT per message in a transaction per batch (handlers/sqltx), with
// the idempotency claim written in that same transaction when idempotent
// (idempotency.InTransaction), or the same rows written by hand: the cost of
// the guard where it is meant to run, and the floor beneath it.
func consumeTransactional(ctx context.Context, s settings, queue string, body []byte, limit time.Duration, workers int, batch uint16, kind txGuard) (measurement, error) {
	db, err := openDatabase(ctx, s.dsn)
	if err != nil {
		return measurement{}, err
	}
	defer db.Close()
	const claims, effects = "bench_idempotency", "bench_effects"
	store, err := idempotency.NewSQLStore(db, sqldialect.MySQL, idempotency.StoreOptions.Table(claims))
	if err != nil {
		return measurement{}, err
	}
	ddl := append([]string{"DROP TABLE IF EXISTS " + claims, "DROP TABLE IF EXISTS " + effects,
		"CREATE TABLE " + effects + " (id varchar(64) NOT NULL PRIMARY KEY, handled_at datetime(6) NOT NULL)"},
		sqlmq.Statements(store.Schema())...)
	for _, statement := range ddl {
		if _, err := db.ExecContext(ctx, statement); err != nil {
			return measurement{}, fmt.Errorf("prepare the bench tables: %w", err)
		}
	}
	defer func() {
		_, _ = db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+claims)
		_, _ = db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+effects)
	}()
	write := messaging.Middleware(func(inner messaging.Handler) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			tx := messaging.TransactionSlotFrom(ctx).Tx
			for _, delivery := range messaging.DeliveriesFrom(ctx) {
				if _, err := tx.ExecContext(ctx, "INSERT INTO "+effects+" (id, handled_at) VALUES (?, NOW(6))", delivery.MessageID); err != nil {
					panic(err)
				}
			}
			inner.Handle(ctx, messages...)
		})
	})
	var guard messaging.Middleware
	switch kind {
	case withClaims:
		guard = idempotency.InTransaction(store)
	case withRows:
		rows := &handWrittenRows{db: db, table: claims, statements: map[int]*sql.Stmt{}}
		defer rows.close()
		guard = rows.middleware
	}
	return consumeWith(ctx, s, queue, body, limit, workers, messaging.Chain(sqltx.Middleware(db), guard, write), streaming.SubscriptionOptions.BatchCapacity(batch))
}

// txGuard is what consumeTransactional writes besides the handler's rows.
type txGuard int

const (
	withoutGuard txGuard = iota // nothing
	withClaims                  // idempotency.InTransaction's claims
	withRows                    // the claims' rows, by hand
)

// handWrittenRows writes one row per message of the batch into a table of
// the claims' shape, in the batch's transaction, with one INSERT per batch
// prepared once per batch size: what a careful hand-written guard pays at
// the least, without looking at what is already there.
type handWrittenRows struct {
	db         *sql.DB
	table      string
	mu         sync.Mutex
	statements map[int]*sql.Stmt
}

func (h *handWrittenRows) middleware(inner messaging.Handler) messaging.Handler {
	return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		deliveries := messaging.DeliveriesFrom(ctx)
		statement, err := h.statement(ctx, len(deliveries))
		if err != nil {
			panic(err)
		}
		owner, now := messaging.NewID(), time.Now().UTC()
		args := make([]any, 0, 3*len(deliveries))
		for _, delivery := range deliveries {
			args = append(args, delivery.MessageID, now, owner)
		}
		if _, err := messaging.TransactionSlotFrom(ctx).Tx.StmtContext(ctx, statement).ExecContext(ctx, args...); err != nil {
			panic(err)
		}
		inner.Handle(ctx, messages...)
	})
}

func (h *handWrittenRows) statement(ctx context.Context, n int) (*sql.Stmt, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if statement := h.statements[n]; statement != nil {
		return statement, nil
	}
	query := "INSERT INTO " + h.table + " (`key`, handled_at, confirmed, claimed_by) VALUES (?, ?, TRUE, ?)" + strings.Repeat(", (?, ?, TRUE, ?)", n-1)
	statement, err := h.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare the hand-written rows: %w", err)
	}
	h.statements[n] = statement
	return statement, nil
}

func (h *handWrittenRows) close() {
	for _, statement := range h.statements {
		_ = statement.Close()
	}
}
