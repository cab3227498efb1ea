package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// TestAnOrderWhoseCommitLostItsConnectionIsAnsweredTruthfully puts the
// order's COMMIT in doubt on MariaDB, deterministically, through a proxy
// between the service and the database: when the server committed and only
// its answer was lost, the order was stored and the answer is 201; when the
// COMMIT never reached the server, nothing was stored and the answer is 503;
// when the database could not be asked, 503 with the advice to send the
// request again with its Idempotency-Key.
func TestAnOrderWhoseCommitLostItsConnectionIsAnsweredTruthfully(t *testing.T) {
	db := testenv.MySQL(t)
	ctx := context.Background()
	if err := createTables(ctx, db); err != nil {
		t.Fatal(err)
	}
	table := "orders_outbox_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	ddl, err := sqlmq.TableSchema(sqldialect.MySQL, table)
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range sqlmq.Statements(ddl) {
		if _, err := db.ExecContext(ctx, statement); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
	cutter := testenv.CutCommits(t)
	proxied, err := sql.Open("mysql", cutter.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxied.Close() })
	// The processor never runs: what is in doubt is the order's commit.
	outbox, _ := sqlmq.New(nil, sqlmq.Options.StorageHandle(proxied), sqlmq.Options.Table(table),
		sqlmq.Options.CommitCheckTimeout(500*time.Millisecond))
	encoded := serialization.New(outbox, serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(OrderPlaced{}): placedTopic}))
	api, err := newOrdersAPI(ctx, proxied, encoded, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer api.close()

	for _, c := range []struct {
		name string
		cut  func()
		want int
		rows int
		says string
	}{
		{"the server committed and its answer was lost", cutter.LoseNextCommitAnswer, http.StatusCreated, 1, `"status":"placed"`},
		{"the COMMIT never reached the server", cutter.LoseNextCommit, http.StatusServiceUnavailable, 0, unavailable},
		{"the database vanished with the answer", cutter.VanishAtNextCommitAnswer, http.StatusServiceUnavailable, 1, "Idempotency-Key, which finds the order"},
	} {
		item := "in-doubt-" + messaging.NewID()
		c.cut()
		recorder := httptest.NewRecorder()
		api.routes().ServeHTTP(recorder, httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(fmt.Sprintf(`{"item":%q,"quantity":1}`, item))))
		if recorder.Code != c.want || !strings.Contains(recorder.Body.String(), c.says) {
			t.Errorf("%s: %d %s; want %d saying %q", c.name, recorder.Code, recorder.Body, c.want, c.says)
		}
		var orders int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE item = ?", item).Scan(&orders); err != nil {
			t.Fatal(err)
		}
		if orders != c.rows {
			t.Errorf("%s: %d order(s) stored; want %d", c.name, orders, c.rows)
		}
		select {
		case <-cutter.Cuts():
		default:
			t.Errorf("%s: the proxy cut no COMMIT", c.name)
		}
	}
}
