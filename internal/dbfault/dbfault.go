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

// Unavailable marks err, a failure to begin or commit a batch's transaction,
// with messaging.Outage: the transaction's dependency did not answer, so the
// batch's messages are not to blame. It leaves err as it is when it is the
// message's own after all (a field over the wire limit, an unroutable
// message, an error marked messaging.Fatal), and when the context had
// already ended (the failure is the shutdown's).
func Unavailable(ctxErr, err error) error {
	if err == nil || ctxErr != nil || messaging.IsFatal(err) ||
		errors.Is(err, messaging.ErrWireLimit) || errors.Is(err, messaging.ErrUnroutable) {
		return err
	}
	return messaging.Outage(err)
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
