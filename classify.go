package messaging

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"syscall"
)

// This file is the one place that says what an error means for a message:
// the marks a handler or a dependency puts on an error (Fatal, Outage,
// Retryable), and the classifiers every package asks instead of writing a rule
// of its own. The rules, in the order they are applied:
//
//   - Fatal wins: retrying cannot fix the message, so it is dead-lettered.
//   - An outage is never a verdict on a message: a dependency (the broker, the
//     database, a store) is down, and the message is held until it answers.
//     A connection that closed or was severed under a call is an outage for
//     every caller (IsConnectionLost), and so is a database that went away
//     (IsDatabaseLost).
//   - Retryable marks what a later attempt may fix where the default is to
//     give up at once (a decode that needed a registry that was down).
//   - Anything else is the message's own failure, and spends its budget.

// fatalError marks an error that retrying cannot fix.
type fatalError struct{ err error }

func (f fatalError) Error() string { return f.err.Error() }
func (f fatalError) Unwrap() error { return f.err }

// Fatal marks err as unfixable by retrying: a handler that panics with it is
// dead-lettered at once instead of spending its retry budget. Fatal(nil) is nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return fatalError{err: err}
}

// Fatalf is Fatal(fmt.Errorf(format, args...)).
func Fatalf(format string, args ...any) error {
	return Fatal(fmt.Errorf(format, args...))
}

// IsFatal reports whether err, or anything it wraps, was marked with Fatal.
func IsFatal(err error) bool {
	var f fatalError
	return errors.As(err, &f)
}

// outageError marks a failure of a dependency rather than of a message.
type outageError struct{ err error }

func (o outageError) Error() string { return o.err.Error() }
func (o outageError) Unwrap() error { return o.err }

// Outage marks err as the failure of a dependency (the database or the broker
// unreachable, a transaction that cannot begin, a commit the database did not
// answer, a store that is overloaded), not of the message being handled. The
// retry and settlement decorators never spend a message's budget on an outage
// and never dead-letter for one: they hold the messages and back off until
// the dependency answers. Outage(nil) is nil.
func Outage(err error) error {
	if err == nil {
		return nil
	}
	if IsOutage(err) {
		return err
	}
	return outageError{err: err}
}

// IsOutage reports whether err was marked with Outage, or is recognisably a
// dependency's failure: a lost connection (IsConnectionLost), a lost database
// (IsDatabaseLost), a refused or timed-out network connection, a bad driver
// connection, or one of this module's broker timeouts, lost confirms and
// paused publishing. A Fatal mark wins over everything.
func IsOutage(err error) bool {
	if err == nil || IsFatal(err) {
		return false
	}
	var o outageError
	if errors.As(err, &o) {
		return true
	}
	return isDependencyFailure(err) || IsConnectionLost(err) || IsDatabaseLost(err)
}

// OutageOf reports whether value, a recovered panic value, is an error that
// IsOutage recognises, and returns it. Retry holds such a batch without
// spending its budget; a settlement decorator never sets it aside.
func OutageOf(value any) (error, bool) {
	err, ok := value.(error)
	if !ok || !IsOutage(err) {
		return nil, false
	}
	return err, true
}

// isDependencyFailure recognises, without a mark, the errors that say a
// dependency could not be reached or did not answer in time.
func isDependencyFailure(err error) bool {
	for _, sentinel := range []error{
		driver.ErrBadConn, syscall.ECONNREFUSED, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH,
		ErrPublishingPaused, ErrTooManyOutstanding, ErrConnectTimeout,
	} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	// A network error counts when it timed out or is a failed dial, read or
	// write: not a malformed URL, a TLS refusal or an unknown host, which
	// waiting does not fix.
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// IsConnectionLost reports whether err says the connection or channel a call
// used closed or was severed under it, so that the call's outcome says nothing
// about its messages: ErrClosed (which the transports return for every call
// on a connection that closed, from the first failure on, and which a
// *BrokerError of 320 CONNECTION_FORCED or 541 INTERNAL_ERROR matches),
// ErrArrivalUnknown (the confirms were lost with the connection), one of the
// broker timeouts that sever the connection, or a socket that was reset,
// closed or cut short. A publish that failed because the broker blocked the
// connection (ErrPublishingPaused) is not lost: the connection is kept, and
// its confirms come when the alarm clears.
//
// For a *PublishError, it reports whether any message of the write failed so.
// Every caller treats a lost connection as an outage (IsOutage): it is
// dialled again, and the message is held, never set aside for it.
func IsConnectionLost(err error) bool {
	if err == nil {
		return false
	}
	var publishErr *PublishError
	if errors.As(err, &publishErr) {
		for _, failed := range publishErr.Failed() {
			if connectionLost(failed.Err) {
				return true
			}
		}
		return false
	}
	return connectionLost(err)
}

func connectionLost(err error) bool {
	if errors.Is(err, ErrPublishingPaused) {
		return false
	}
	for _, sentinel := range []error{
		ErrClosed, ErrArrivalUnknown, ErrPublishTimeout, ErrCommitTimeout, ErrAcknowledgeTimeout, ErrCloseTimeout,
		syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE, io.ErrUnexpectedEOF, net.ErrClosed,
	} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}

// IsNotSent reports whether err says a write was refused before any of it
// was sent, because its connection or channel had closed (ErrClosed) since it
// was last used: no message of the write has an unknown arrival
// (ErrArrivalUnknown), and for a *PublishError every message failed so.
// Sending the same write again, on a connection dialled for it, cannot
// duplicate anything; batch.Writer, the one publisher that keeps a
// connection between calls, does so once, so a connection that died while
// it was idle does not fail the next call. A lost confirmation is not one:
// that message may have landed.
func IsNotSent(err error) bool {
	var publishErr *PublishError
	if !errors.As(err, &publishErr) {
		return notSent(err)
	}
	failed := publishErr.Failed()
	if len(failed) == 0 || len(failed) != len(publishErr.Results) {
		return false
	}
	for _, f := range failed {
		if !notSent(f.Err) {
			return false
		}
	}
	return true
}

func notSent(err error) bool {
	return errors.Is(err, ErrClosed) && !errors.Is(err, ErrArrivalUnknown)
}

// MySQL and MariaDB server errors that mean the server or the connection is
// going away, not that the statement is wrong.
const (
	mysqlTooManyConnections = 1040 // ER_CON_COUNT_ERROR
	mysqlServerShutdown     = 1053 // ER_SERVER_SHUTDOWN: "Server shutdown in progress"
	mysqlConnectionKilled   = 1927 // ER_CONNECTION_KILLED (MariaDB)
)

// IsDatabaseLost reports whether err says the database connection or server
// is unavailable rather than that a statement is wrong: go-sql-driver/mysql's
// invalid connection (a connection that died under a statement), a
// MySQL/MariaDB shutdown, killed-connection or too-many-connections error, or
// a PostgreSQL error of class 08 (connection exception), 53300 (too many
// connections) or 57P01..57P03 (the server is shutting down or starting).
//
// It knows the drivers' errors by their shape (a MySQLError's Number, an
// SQLState method), so this package imports no driver and a program links
// only the driver it uses.
func IsDatabaseLost(err error) bool {
	return anyInChain(err, func(e error) bool {
		if number, ok := mysqlErrorNumber(e); ok {
			switch number {
			case mysqlTooManyConnections, mysqlServerShutdown, mysqlConnectionKilled:
				return true
			}
			return false
		}
		if mysqlInvalidConn(e) {
			return true
		}
		if coded, ok := e.(interface{ SQLState() string }); ok {
			state := coded.SQLState()
			return strings.HasPrefix(state, "08") || state == "53300" ||
				state == "57P01" || state == "57P02" || state == "57P03"
		}
		return false
	})
}

// mysqlErrorNumber reads the Number of a go-sql-driver/mysql *MySQLError.
func mysqlErrorNumber(err error) (uint16, bool) {
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, false
	}
	t := v.Type().Elem()
	if t.Name() != "MySQLError" || !strings.HasSuffix(t.PkgPath(), "go-sql-driver/mysql") {
		return 0, false
	}
	number := v.Elem().FieldByName("Number")
	if !number.IsValid() || number.Kind() != reflect.Uint16 {
		return 0, false
	}
	return uint16(number.Uint()), true
}

// mysqlInvalidConn recognises go-sql-driver/mysql's ErrInvalidConn, an
// errors.New value: by its type and its text, since comparing it with the
// driver's variable would mean importing the driver.
func mysqlInvalidConn(err error) bool {
	return err.Error() == "invalid connection" && reflect.TypeOf(err).String() == "*errors.errorString"
}

// anyInChain reports whether match holds for err or anything it wraps,
// through Unwrap() error and Unwrap() []error.
func anyInChain(err error, match func(error) bool) bool {
	for err != nil {
		if match(err) {
			return true
		}
		switch wrapped := err.(type) {
		case interface{ Unwrap() error }:
			err = wrapped.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range wrapped.Unwrap() {
				if anyInChain(inner, match) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// IsPermanent reports whether err is a refusal that neither waiting nor
// another broker node fixes: the credentials or permissions are wrong
// (ErrAccessRefused) or the virtual host, queue or exchange does not exist
// (ErrNotFound), or the address itself does not parse (ErrBadAddress). A
// service starting up exits on it, saying what to fix, instead of retrying
// for ever.
func IsPermanent(err error) bool {
	return errors.Is(err, ErrAccessRefused) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrBadAddress)
}

// retryableError marks an error a later attempt may fix.
type retryableError struct{ err error }

func (r retryableError) Error() string { return r.err.Error() }
func (r retryableError) Unwrap() error { return r.err }

// Retryable marks err as worth another attempt even where the default is to
// give up at once: a decode error marked Retryable (a claim-check store that
// timed out, a schema registry that is down) goes through the retry policy
// instead of the parked queue. Retryable(nil) is nil.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return retryableError{err: err}
}

// IsRetryable reports whether err, or anything it wraps, was marked with
// Retryable and not also with Fatal.
func IsRetryable(err error) bool {
	if IsFatal(err) {
		return false
	}
	var r retryableError
	return errors.As(err, &r)
}
