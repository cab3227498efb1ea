// Package dbfault recognises the database driver errors that say the
// connection or the server went away (rather than that a statement is bad),
// which messaging.IsOutage cannot know without knowing the drivers. The
// transaction decorators mark such errors with messaging.Outage.
//
// It imports github.com/go-sql-driver/mysql for its sentinel and error type,
// which registers that driver under the name "mysql" as a side effect, as
// importing it anywhere in a program does. PostgreSQL drivers are recognised
// through their SQLState method, without an import.
package dbfault

import (
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/warrenmq/messaging"
)

// MySQL and MariaDB server errors that mean the server or the connection is
// going away, not that the statement is wrong.
const (
	tooManyConnections = 1040 // ER_CON_COUNT_ERROR
	serverShutdown     = 1053 // ER_SERVER_SHUTDOWN: "Server shutdown in progress"
	connectionKilled   = 1927 // ER_CONNECTION_KILLED (MariaDB)
)

// Lost reports whether err says the database connection or server is
// unavailable: go-sql-driver's ErrInvalidConn (a connection that died under a
// statement), a MySQL/MariaDB shutdown, killed-connection or too-many-
// connections error, or a PostgreSQL error of class 08 (connection
// exception), 53300 (too many connections) or 57P01..57P03 (the server is
// shutting down or starting).
func Lost(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, mysql.ErrInvalidConn) {
		return true
	}
	var server *mysql.MySQLError
	if errors.As(err, &server) {
		switch server.Number {
		case tooManyConnections, serverShutdown, connectionKilled:
			return true
		}
		return false
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		state := coded.SQLState()
		return strings.HasPrefix(state, "08") || state == "53300" ||
			state == "57P01" || state == "57P02" || state == "57P03"
	}
	return false
}

// BeginFailed marks err, a failure to begin a batch's transaction, with
// messaging.Outage: nothing of the batch has run yet, so its messages are not
// to blame. It leaves err as it is when it is marked messaging.Fatal, and when
// the context had already ended (the failure is the shutdown's).
func BeginFailed(ctxErr, err error) error {
	if err == nil || ctxErr != nil || messaging.IsFatal(err) {
		return err
	}
	return messaging.Outage(err)
}

// CommitFailed marks err, a failure to commit a batch's transaction, with
// messaging.Outage only when it says the database or the broker did not
// answer (Lost, or messaging.IsOutage: a refused or reset connection, a
// timeout, a bad driver connection). Any other failure (a deferred
// constraint, a serialization failure, a message the outbox or the broker
// refused) may be the messages' own: it is left as it is, so it spends their
// retry budget and ends in the dead-letter queue instead of holding them for
// ever. So is a failure after the context ended (it is the shutdown's).
func CommitFailed(ctxErr, err error) error {
	if err == nil || ctxErr != nil || messaging.IsFatal(err) ||
		errors.Is(err, messaging.ErrWireLimit) || errors.Is(err, messaging.ErrUnroutable) {
		return err
	}
	if Lost(err) || messaging.IsOutage(err) {
		return messaging.Outage(err)
	}
	return err
}

// MarkPanic returns a handler's panic value marked with messaging.Outage when
// it is an error that says the database connection was lost (Lost) and is
// not yet recognised as an outage; any other value is returned unchanged.
// errors.Is and errors.As still see the original error through the mark.
func MarkPanic(value any) any {
	err, ok := value.(error)
	if !ok || messaging.IsOutage(err) || messaging.IsFatal(err) || !Lost(err) {
		return value
	}
	return messaging.Outage(err)
}
