package dbfault

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/warrenmq/messaging"
)

func TestLost(t *testing.T) {
	cases := []struct {
		err  error
		lost bool
	}{
		{nil, false},
		{errors.New("invalid connection"), false}, // the text alone is not the sentinel
		{mysql.ErrInvalidConn, true},
		{fmt.Errorf("exec: %w", mysql.ErrInvalidConn), true},
		{&mysql.MySQLError{Number: 1053, Message: "Server shutdown in progress"}, true},
		{fmt.Errorf("insert: %w", &mysql.MySQLError{Number: 1927}), true},
		{&mysql.MySQLError{Number: 1040}, true},
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false},
		{&mysql.MySQLError{Number: 1406, Message: "Data too long"}, false},
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "53300"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{sql.ErrNoRows, false},
	}
	for _, c := range cases {
		if got := Lost(c.err); got != c.lost {
			t.Errorf("Lost(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}

func TestBeginFailed(t *testing.T) {
	down := errors.New("sql: database is closed")
	if err := BeginFailed(nil, down); !messaging.IsOutage(err) || !errors.Is(err, down) {
		t.Errorf("a begin failure is an outage that keeps its cause: %v", err)
	}
	if err := BeginFailed(nil, messaging.Fatal(down)); messaging.IsOutage(err) {
		t.Errorf("a Fatal begin failure was marked an outage: %v", err)
	}
	if err := BeginFailed(context.Canceled, down); err != down {
		t.Errorf("a failure after the context ended was marked: %v", err)
	}
	if BeginFailed(nil, nil) != nil {
		t.Error("BeginFailed(nil) is not nil")
	}
}

func TestCommitFailed(t *testing.T) {
	refused := fmt.Errorf("commit: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	for _, down := range []error{refused, fmt.Errorf("commit: %w", mysql.ErrInvalidConn), &pgconn.PgError{Code: "57P01"}} {
		if err := CommitFailed(nil, down); !messaging.IsOutage(err) || !errors.Is(err, down) {
			t.Errorf("a commit the database did not answer is an outage that keeps its cause: %v", err)
		}
	}
	for _, own := range []error{
		&messaging.FieldError{Field: "MessageID", Size: 300, Limit: 255},
		fmt.Errorf("commit: %w", messaging.ErrUnroutable),
		fmt.Errorf("commit: %w", messaging.ErrRefused),
		messaging.Fatal(refused),
		&pgconn.PgError{Code: "23505"}, // a deferred unique constraint: the batch's own rows
		&pgconn.PgError{Code: "40001"}, // a serialization failure
		&mysql.MySQLError{Number: 1452},
	} {
		if err := CommitFailed(nil, own); messaging.IsOutage(err) || err != own {
			t.Errorf("the messages' own commit failure %v was marked an outage", own)
		}
	}
	if err := CommitFailed(context.Canceled, refused); err != refused {
		t.Errorf("a failure after the context ended was marked: %v", err)
	}
	if CommitFailed(nil, nil) != nil {
		t.Error("CommitFailed(nil) is not nil")
	}
}

func TestMarkPanic(t *testing.T) {
	if value := MarkPanic(fmt.Errorf("update: %w", mysql.ErrInvalidConn)); !messaging.IsOutage(value.(error)) || !errors.Is(value.(error), mysql.ErrInvalidConn) {
		t.Errorf("a lost connection was not marked: %v", value)
	}
	own := errors.New("quantity must be positive")
	for _, value := range []any{"text", 42, own, messaging.Fatal(mysql.ErrInvalidConn)} {
		if got := MarkPanic(value); got != value {
			t.Errorf("MarkPanic(%v) changed the value to %v", value, got)
		}
	}
}
