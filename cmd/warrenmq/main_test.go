package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/sqlmq"
)

func TestUsageErrorsExitWithUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"nope"}, {"outbox"}, {"outbox", "nope", "-driver", "sqlite", "-dsn", ":memory:"}, {"outbox", "pending", "-driver", "oracle"}} {
		err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
	}
}

// An operator lists a retired row, releases it, and sees it pending again.
func TestOutboxRetiredAndRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, statement := range sqlmq.Statements(sqlmq.Schema(sqlmq.SQLite)) {
		if _, err := db.Exec(statement); err != nil {
			t.Fatalf("%s: %v", statement, err)
		}
	}
	now := time.Now().UnixMicro()
	if _, err := db.Exec(`INSERT INTO Messages (message_id, topic, routing_key, message_type, payload, created_us, publish_attempts, last_error, retired_us)
		VALUES ('m-1', 'gone-exchange', 'k', 'order-placed', x'7b7d', ?, 10, '404 NOT_FOUND - no exchange', ?)`, now, now); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-driver", "sqlite", "-dsn", path}
	out := &bytes.Buffer{}

	if err := run(context.Background(), append([]string{"outbox", "pending"}, flags...), out, out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0 message(s)") {
		t.Fatalf("a retired row is not pending: %s", out)
	}

	out.Reset()
	if err := run(context.Background(), append([]string{"outbox", "retired"}, flags...), out, out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"m-1", "gone-exchange", "404 NOT_FOUND", "warrenmq outbox release"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("retired listing lacks %q:\n%s", want, out)
		}
	}

	out.Reset()
	if err := run(context.Background(), append(append([]string{"outbox", "release"}, flags...), "1"), out, out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "released 1 of 1") {
		t.Fatalf("release: %s", out)
	}
	out.Reset()
	_ = run(context.Background(), append([]string{"outbox", "pending"}, flags...), out, out)
	if !strings.Contains(out.String(), "1 message(s)") {
		t.Fatalf("a released row should be pending again: %s", out)
	}
}

func TestStatusAgainstTheLocalBroker(t *testing.T) {
	url := testenv.Broker(t)
	out := &bytes.Buffer{}
	if err := run(context.Background(), []string{"status", "-amqp", url}, out, out); err != nil {
		t.Fatalf("status: %v", err)
	}
	if !strings.Contains(out.String(), "broker ok") {
		t.Fatalf("status printed %q", out)
	}
	err := run(context.Background(), []string{"status", "-amqp", "amqp://guest:wrong@127.0.0.1:5672/"}, out, out)
	if err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Fatalf("wrong credentials: want a credentials error, got %v", err)
	}
}
