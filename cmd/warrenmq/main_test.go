package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/sqldialect"
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
	for _, statement := range sqlmq.Statements(sqlmq.Schema(sqldialect.SQLite)) {
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
	// (the password "guest" is masked wherever it appears, the user name too)
	if !strings.Contains(out.String(), "broker ok at amqp://") || !strings.Contains(out.String(), ":xxxxx@127.0.0.1:5672/") {
		t.Fatalf("status printed %q", out)
	}
	err := run(context.Background(), []string{"status", "-amqp", "amqp://guest:wrong@127.0.0.1:5672/"}, out, out)
	if err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Fatalf("wrong credentials: want a credentials error, got %v", err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"status", "-json", "-amqp", url}, out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var report statusJSON
	if err := json.Unmarshal(out.Bytes(), &report); err != nil || !report.OK || report.Seconds <= 0 || !strings.Contains(report.Address, "xxxxx") {
		t.Fatalf("%v: %s", err, out)
	}
}

// An operator sees which rows hold the outbox up and why: the oldest pending
// rows with their age, attempts and last error, not just a count.
func TestOutboxPendingShowsTheOldestRowsWithAttemptsAndLastError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, statement := range sqlmq.Statements(sqlmq.Schema(sqldialect.SQLite)) {
		if _, err := db.Exec(statement); err != nil {
			t.Fatalf("%s: %v", statement, err)
		}
	}
	old := time.Now().Add(-90 * time.Second).UnixMicro()
	retry := time.Now().Add(time.Minute).UnixMicro()
	if _, err := db.Exec(`INSERT INTO Messages (message_id, topic, routing_key, message_type, payload, created_us, publish_attempts, last_error, lease_until_us)
		VALUES ('stuck-1', 'orders', 'eu', 'order-placed', x'7b7d', ?, 3, 'message stuck-1: the channel closed (Exception (406) Reason: "PRECONDITION_FAILED - message size 140000000 is larger than configured max size 134217728")', ?)`, old, retry); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := db.Exec(`INSERT INTO Messages (message_id, topic, payload, created_us) VALUES (?, 'orders', x'7b7d', ?)`, fmt.Sprintf("fine-%d", i), time.Now().UnixMicro()); err != nil {
			t.Fatal(err)
		}
	}
	out := &bytes.Buffer{}
	if err := run(context.Background(), []string{"outbox", "pending", "-driver", "sqlite", "-dsn", path, "-limit", "2"}, out, out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("want a count, a header, 2 rows and a note; got:\n%s", out)
	}
	for _, want := range []string{"4 message(s)", "ATTEMPTS", "LAST ERROR", "the oldest 2 of 4"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("pending lacks %q:\n%s", want, out)
		}
	}
	first := strings.Fields(lines[2])
	if first[0] != "1" || first[1] != "1m30s" || first[2] != "3" || first[3] != "stuck-1" {
		t.Errorf("the oldest row should read: id 1, age 1m30s, 3 attempts, stuck-1; got %q", lines[2])
	}
	if !strings.Contains(lines[2], "PRECONDITION_FAILED") || !strings.Contains(lines[2], "in 1m") {
		t.Errorf("the oldest row should show its last error and when it is tried again: %q", lines[2])
	}
	if !strings.Contains(lines[3], "fine-0") || !strings.Contains(lines[3], " due ") {
		t.Errorf("the second row: %q", lines[3])
	}
}

// A password holding '#', '@' and ':' is never printed: not by status, not by
// the outbox commands, not in a usage message that shows a default taken from
// the environment.
func TestNoOutputCarriesAPassword(t *testing.T) {
	testenv.Broker(t)
	const password = "s3cr#t@pa:ss"
	const encoded = "s3cr%23t%40pa%3Ass" // the same password as a URI must carry it
	fragments := []string{password, "s3cr", "t@pa", "pa:ss", "t@pa:ss", encoded}
	check := func(what string, out *bytes.Buffer, err error) {
		t.Helper()
		text := out.String()
		if err != nil {
			text += "\n" + err.Error()
		}
		if !strings.Contains(text, "xxxxx") && err != nil && !errors.Is(err, errUsage) {
			t.Errorf("%s: the masked address should be named; got %s", what, text)
		}
		for _, fragment := range fragments {
			if strings.Contains(text, fragment) {
				t.Errorf("%s printed %q:\n%s", what, fragment, text)
			}
		}
	}
	for _, c := range []struct {
		what string
		args []string
	}{
		{"status", []string{"status", "-amqp", "amqp://guest:" + password + "@127.0.0.1:5672/", "-timeout", "5s"}},
		{"status, malformed", []string{"status", "-amqp", "amqp://guest:" + password + "@127.0.0.1:notaport/"}},
		{"status, percent-encoded", []string{"status", "-amqp", "amqp://guest:" + encoded + "@127.0.0.1:5672/", "-timeout", "5s"}},
		{"mysql", []string{"outbox", "pending", "-driver", "mysql", "-dsn", "root:" + password + "@tcp(127.0.0.1:3306)/test"}},
		{"postgresql", []string{"outbox", "pending", "-driver", "pgx", "-dsn", "postgres://postgres:" + password + "@127.0.0.1:5432/test?sslmode=disable"}},
		{"postgresql key=value", []string{"outbox", "pending", "-driver", "pgx", "-dsn", "host=127.0.0.1 user=nobody password=" + password + " dbname=test sslmode=disable"}},
	} {
		out := &bytes.Buffer{}
		err := run(context.Background(), c.args, out, out)
		if err == nil {
			t.Errorf("%s: want an error (wrong password), got none:\n%s", c.what, out)
		}
		check(c.what, out, err)
	}

	t.Setenv("WARRENMQ_AMQP", "amqp://guest:"+password+"@127.0.0.1:5672/")
	t.Setenv("WARRENMQ_DSN", "root:"+password+"@tcp(127.0.0.1:3306)/test")
	for _, args := range [][]string{{"status", "-nope"}, {"outbox", "pending", "-nope"}} {
		out := &bytes.Buffer{}
		err := run(context.Background(), args, out, out)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
		if !strings.Contains(out.String(), "xxxxx") {
			t.Errorf("%q: the usage should show the masked default address:\n%s", args, out)
		}
		check(strings.Join(args, " "), out, err)
	}
}
