package dbfault

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

func TestUnavailable(t *testing.T) {
	down := errors.New("dial tcp: connection refused")
	if err := Unavailable(nil, down); !messaging.IsOutage(err) || !errors.Is(err, down) {
		t.Errorf("a begin or commit failure is an outage that keeps its cause: %v", err)
	}
	for _, own := range []error{
		&messaging.FieldError{Field: "MessageID", Size: 300, Limit: 255},
		fmt.Errorf("commit: %w", messaging.ErrUnroutable),
		messaging.Fatal(down),
	} {
		if err := Unavailable(nil, own); messaging.IsOutage(err) || err != own {
			t.Errorf("the message's own failure %v was marked an outage", own)
		}
	}
	if err := Unavailable(context.Canceled, down); err != down {
		t.Errorf("a failure after the context ended was marked: %v", err)
	}
	if Unavailable(nil, nil) != nil {
		t.Error("Unavailable(nil) is not nil")
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
