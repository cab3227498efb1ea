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

// Asking for help is a success: the usage goes to stdout, nothing to
// stderr, whichever way it is asked, for every verb.
func TestHelpPrintsUsageToStdoutAndSucceeds(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "warrenmq help [VERB]"},
		{[]string{"-h"}, "Exit status: 0 success"},
		{[]string{"--help"}, "warrenmq outbox schema"},
		{[]string{"help", "replay"}, "-dry-run"},
		{[]string{"replay", "-h"}, "-each"},
		{[]string{"replay", "-dry-run", "-help"}, "-progress"},
		{[]string{"queues", "-h"}, "4 when a QUEUE named does not exist"},
		{[]string{"help", "queues"}, "-schedule"},
		{[]string{"outbox", "-h"}, "warrenmq outbox release"},
		{[]string{"help", "outbox"}, "warrenmq outbox pending"},
		{[]string{"outbox", "pending", "-h"}, "-limit"},
		{[]string{"help", "outbox", "release"}, "-all"},
		{[]string{"outbox", "schema", "-h"}, "-dialect"},
		{[]string{"status", "-h"}, "-timeout"},
		{[]string{"topology", "-h"}, "topology check"},
		{[]string{"topology", "plan", "-h"}, "-replication"},
		{[]string{"help", "topology", "check"}, "-amqp"},
		{[]string{"schedule", "-h"}, "schedule topology"},
		{[]string{"schedule", "topology", "-help"}, "-check"},
		{[]string{"stream", "-h"}, "stream tail"},
		{[]string{"help", "stream", "tail"}, "-from"},
		{[]string{"console", "-h"}, "-listen"},
		{[]string{"help", "console"}, "-actions"},
	} {
		stdout, stderr := &bytes.Buffer{}, &bytes.Buffer{}
		err := run(context.Background(), c.args, stdout, stderr)
		if err != nil || exitCode(err) != 0 {
			t.Errorf("%q: want success, got %v", c.args, err)
		}
		if !strings.Contains(stdout.String(), c.want) || !strings.Contains(stdout.String(), "usage:") {
			t.Errorf("%q: stdout lacks %q:\n%s", c.args, c.want, stdout)
		}
		if stderr.Len() != 0 {
			t.Errorf("%q: help wrote to stderr:\n%s", c.args, stderr)
		}
	}
	stdout, stderr := &bytes.Buffer{}, &bytes.Buffer{}
	err := run(context.Background(), []string{"replay", "-nope", "x.dlq"}, stdout, stderr)
	if exitCode(err) != exitUsage || stdout.Len() != 0 || !strings.Contains(stderr.String(), "-dry-run") || !strings.Contains(err.Error(), "-nope") {
		t.Fatalf("a bad flag: exit %d (%v); the usage belongs on stderr:\nstdout %s\nstderr %s", exitCode(err), err, stdout, stderr)
	}
	if err := run(context.Background(), []string{"help", "nope"}, &bytes.Buffer{}, &bytes.Buffer{}); exitCode(err) != exitUsage {
		t.Fatalf("help of an unknown verb: %v", err)
	}
}

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("broker down"), exitFailed},
		{fmt.Errorf("%w: bad", errUsage), exitUsage},
		{fmt.Errorf("%w: look", errAttention), exitAttention},
		{fmt.Errorf("%w: no queue", errNotFound), exitNotFound},
		{fmt.Errorf("%w: %w", errNotFound, errAttention), exitNotFound},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if !strings.Contains(usage, "4 something named does not exist") {
		t.Error("the usage must document exit status 4")
	}
}

// The outbox table's DDL, for migration tools: each dialect, another table
// name, goose's form and the down migration; the DDL applies to a database.
func TestOutboxSchemaPrintsTheDDL(t *testing.T) {
	for _, c := range []struct {
		dialect sqldialect.Dialect
		name    string
	}{{sqldialect.MySQL, "mysql"}, {sqldialect.PostgreSQL, "postgres"}, {sqldialect.SQLite, "sqlite"}} {
		out := &bytes.Buffer{}
		if err := run(context.Background(), []string{"outbox", "schema", "-dialect", c.name}, out, out); err != nil {
			t.Fatal(err)
		}
		if out.String() != strings.TrimRight(sqlmq.Schema(c.dialect), "\n")+"\n" {
			t.Errorf("%s: not sqlmq.Schema:\n%s", c.name, out)
		}
	}
	out := &bytes.Buffer{}
	if err := run(context.Background(), []string{"outbox", "schema", "-dialect", "sqlite", "-table", "Outbox", "-format", "goose"}, out, out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.HasPrefix(text, "-- +goose Up\n") || !strings.Contains(text, "CREATE TABLE IF NOT EXISTS Outbox") || strings.Contains(text, "Messages") ||
		!strings.HasSuffix(text, "-- +goose Down\nDROP TABLE IF EXISTS Outbox;\n") {
		t.Fatalf("goose form:\n%s", text)
	}
	up := strings.TrimPrefix(text[:strings.Index(text, "-- +goose Down")], "-- +goose Up\n")
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "schema.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for range 2 { // applying it twice changes nothing
		for _, statement := range sqlmq.Statements(up) {
			if _, err := db.Exec(statement); err != nil {
				t.Fatalf("%s: %v", statement, err)
			}
		}
	}
	if _, err := db.Exec("INSERT INTO Outbox (message_id, payload, created_us) VALUES ('m', x'00', 1)"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"outbox", "schema", "-down", "-table", "Outbox"}, out, out); err != nil || out.String() != "DROP TABLE IF EXISTS Outbox;\n" {
		t.Fatalf("-down: %v %q", err, out)
	}
	for _, args := range [][]string{{"outbox", "schema", "-dialect", "oracle"}, {"outbox", "schema", "-table", "bad name;"}, {"outbox", "schema", "-format", "flyway"}, {"outbox", "schema", "x"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); exitCode(err) != exitUsage {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
	}
}

// sqliteOutbox is an outbox table in a new SQLite file with retired rows
// 1..retired (and one pending row after them); it returns the flags that
// name it.
func sqliteOutbox(t *testing.T, retired int) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "outbox.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := sqlmq.CreateSchema(context.Background(), db, sqldialect.SQLite, ""); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMicro()
	for i := range retired {
		if _, err := tx.Exec(`INSERT INTO Messages (message_id, topic, routing_key, message_type, payload, created_us, publish_attempts, last_error, retired_us)
			VALUES (?, 'gone-exchange', 'k', 'order-placed', x'7b7d', ?, 10, '404 NOT_FOUND - no exchange', ?)`, fmt.Sprint("r-", i+1), now, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(`INSERT INTO Messages (message_id, topic, payload, created_us, lease_until_us) VALUES ('p-1', 'orders', x'7b7d', ?, ?)`, now, now+60e6); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return []string{"-driver", "sqlite", "-dsn", path}
}

// outbox pending and outbox retired as one JSON document each, with the
// field names doc/operations.md lists.
func TestOutboxListingsAsJSON(t *testing.T) {
	flags := sqliteOutbox(t, 2)
	out := &bytes.Buffer{}
	if err := run(context.Background(), append([]string{"outbox", "pending", "-json"}, flags...), out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var pendingDoc struct {
		Table   string           `json:"table"`
		Pending int64            `json:"pending"`
		Rows    []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &pendingDoc); err != nil || pendingDoc.Table != "Messages" || pendingDoc.Pending != 1 || len(pendingDoc.Rows) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	for _, field := range []string{"id", "message_id", "exchange", "routing_key", "type", "created", "age_seconds", "attempts", "last_error", "lease_owner", "lease_until"} {
		if _, ok := pendingDoc.Rows[0][field]; !ok {
			t.Errorf("a pending row lacks %q: %s", field, out)
		}
	}
	if pendingDoc.Rows[0]["message_id"] != "p-1" || pendingDoc.Rows[0]["lease_until"] == nil {
		t.Errorf("pending row: %v", pendingDoc.Rows[0])
	}

	out.Reset()
	if err := run(context.Background(), append([]string{"outbox", "retired", "-json", "-limit", "1"}, flags...), out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var retiredDoc struct {
		Table string       `json:"table"`
		Rows  []retiredRow `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &retiredDoc); err != nil || len(retiredDoc.Rows) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	if r := retiredDoc.Rows[0]; r.ID != 1 || r.MessageID != "r-1" || r.Exchange != "gone-exchange" || r.Attempts != 10 || r.Retired.IsZero() || !strings.Contains(r.LastError, "NOT_FOUND") {
		t.Fatalf("retired row %+v", r)
	}
	for _, field := range []string{`"id"`, `"message_id"`, `"exchange"`, `"routing_key"`, `"type"`, `"created"`, `"retired"`, `"attempts"`, `"last_error"`} {
		if !strings.Contains(out.String(), field) {
			t.Errorf("a retired row lacks %s: %s", field, out)
		}
	}
	out.Reset()
	empty := sqliteOutbox(t, 0)
	if err := run(context.Background(), append([]string{"outbox", "retired", "-json"}, empty...), out, &bytes.Buffer{}); err != nil || !strings.Contains(out.String(), `"rows": []`) {
		t.Fatalf("no retired rows is an empty list: %v %s", err, out)
	}
}

// Releasing an id that is no retired row (absent, or pending) is exit
// status 4 with the ids named and what to do; the others are released.
func TestOutboxReleaseOfAMissingRowIsNotFound(t *testing.T) {
	flags := sqliteOutbox(t, 2)
	stdout, stderr := &bytes.Buffer{}, &bytes.Buffer{}
	err := run(context.Background(), append(append([]string{"outbox", "release", "-progress", "none"}, flags...), "1", "3", "999"), stdout, stderr)
	if exitCode(err) != exitNotFound {
		t.Fatalf("want exit status 4, got %d: %v", exitCode(err), err)
	}
	for _, want := range []string{"2 of 3 row(s) not released", "3, 999", "not a retired row of Messages", "warrenmq outbox retired"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	if !strings.Contains(stdout.String(), "released 1 of 3 row(s)") {
		t.Fatalf("stdout: %s", stdout)
	}
	stdout.Reset()
	err = run(context.Background(), append(append([]string{"outbox", "release", "-json", "-progress", "none"}, flags...), "1", "2"), stdout, stderr)
	var report releaseReport
	if jsonErr := json.Unmarshal(stdout.Bytes(), &report); jsonErr != nil || exitCode(err) != exitNotFound {
		t.Fatalf("%v %v: %s", jsonErr, err, stdout)
	}
	if report.Requested != 2 || report.Released != 1 || len(report.NotReleased) != 1 || report.NotReleased[0] != 1 {
		t.Fatalf("report %+v", report)
	}
	for _, args := range [][]string{{"outbox", "release"}, {"outbox", "release", "-all", "1"}, {"outbox", "release", "x"}, {"outbox", "pending", "extra"}} {
		if err := run(context.Background(), append(args, flags...), &bytes.Buffer{}, &bytes.Buffer{}); exitCode(err) != exitUsage {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
	}
}

// Releasing many rows shows its progress and ends with the totals; -all
// releases every retired row, the pending one untouched.
func TestOutboxReleaseOfManyRowsShowsProgress(t *testing.T) {
	defer func(every time.Duration) { progressEvery = every }(progressEvery)
	progressEvery = 20 * time.Millisecond // a real database: wait on real time
	const rows = 1000
	flags := sqliteOutbox(t, rows)
	ids := make([]string, 0, rows/2)
	for i := range rows / 2 {
		ids = append(ids, fmt.Sprint(i+1))
	}
	stdout, stderr := &bytes.Buffer{}, &testenv.LogBuffer{}
	if err := run(context.Background(), append(append([]string{"outbox", "release", "-progress", "lines"}, flags...), ids...), stdout, stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("released %d of %d row(s)", rows/2, rows/2)) {
		t.Fatalf("stdout: %s", stdout)
	}
	// One UPDATE per id on a file database takes well over the interval.
	if !strings.Contains(stderr.String(), "release from Messages: ") || !strings.Contains(stderr.String(), fmt.Sprintf(" of %d (", rows/2)) {
		t.Fatalf("no progress line on stderr:\n%s\n%s", stderr, stdout)
	}

	stdout.Reset()
	terminal := &fakeTerminal{}
	if err := run(context.Background(), append([]string{"outbox", "release", "-all"}, flags...), stdout, terminal); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("released %d of %d row(s)", rows/2, rows/2)) {
		t.Fatalf("-all: %s", stdout)
	}
	if !strings.Contains(terminal.String(), "\rrelease from Messages [") || !strings.HasSuffix(terminal.String(), "\x1b[K\n") {
		t.Fatalf("on a terminal, a bar: %q", terminal.String())
	}
	stdout.Reset()
	if err := run(context.Background(), append([]string{"outbox", "release", "-all"}, flags...), stdout, &bytes.Buffer{}); err != nil || !strings.Contains(stdout.String(), "no retired messages") {
		t.Fatalf("nothing left to release: %v %s", err, stdout)
	}
	stdout.Reset()
	_ = run(context.Background(), append([]string{"outbox", "pending"}, flags...), stdout, &bytes.Buffer{})
	if !strings.Contains(stdout.String(), fmt.Sprintf("%d message(s)", rows+1)) {
		t.Fatalf("every row pending again: %s", stdout)
	}
}
