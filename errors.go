package messaging

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Transports wrap them with detail; test with errors.Is.
var (
	// ErrClosed reports use of a connector, connection, reader, stream or writer
	// after Close.
	ErrClosed = errors.New("messaging: already closed")
	// ErrUnroutable reports a mandatory message that reached no queue; the
	// broker returned it (312 NO_ROUTE) and nothing stored it.
	ErrUnroutable = errors.New("messaging: message reached no queue")
	// ErrRefused reports a message the broker negatively acknowledged.
	ErrRefused = errors.New("messaging: the broker refused the message")
	// ErrArrivalUnknown reports a message whose confirmation was lost with its
	// channel or connection: it may or may not have reached the broker.
	ErrArrivalUnknown = errors.New("messaging: connection lost before confirm; arrival unknown")
	// ErrPublishingPaused reports a publish refused at once because the broker has
	// blocked the connection (a memory or disk alarm).
	ErrPublishingPaused = errors.New("messaging: the broker has blocked this connection; publishing is paused")
	// ErrTooManyOutstanding reports a publish that found the window of
	// unconfirmed publishes full for longer than its context allowed.
	ErrTooManyOutstanding = errors.New("messaging: too many publishes awaiting confirmation")

	// ErrCommitTimeout reports a commit not confirmed within the broker timeout;
	// the connection was severed.
	ErrCommitTimeout = errors.New("messaging: commit did not complete within the broker timeout")
	// ErrPublishTimeout reports a publish not completed within the broker timeout;
	// the connection was severed.
	ErrPublishTimeout = errors.New("messaging: publish did not complete within the broker timeout")
	// ErrAcknowledgeTimeout reports an acknowledgement not completed within the
	// broker timeout; the connection was severed.
	ErrAcknowledgeTimeout = errors.New("messaging: acknowledgement did not complete within the broker timeout")
	// ErrCloseTimeout reports a close or cancel not completed within the broker
	// timeout; the connection was severed.
	ErrCloseTimeout = errors.New("messaging: close did not complete within the broker timeout")
	// ErrFiltered marks a delivery whose type the consumer does not accept
	// (serialization's AllowedTypes): a serializer puts it in
	// Delivery.Undecodable, and the runtime acknowledges the delivery without
	// handing it to a handler or parking it.
	ErrFiltered = errors.New("messaging: message type not allowed here; acknowledged without handling")
	// ErrConnectTimeout reports a dial and handshake not completed within the
	// broker timeout.
	ErrConnectTimeout = errors.New("messaging: connect did not complete within the broker timeout")
	// ErrShutdownForced reports a Close that could not wait for work in
	// progress: handlers still running at the shutdown deadline were
	// cancelled and their deliveries left unacknowledged (the broker
	// redelivers them), or a republish in progress was cut off.
	ErrShutdownForced = errors.New("messaging: shutdown forced; work in progress was abandoned and its messages will be redelivered")
)

// PublishResult is the broker's answer for one message of a write.
type PublishResult struct {
	MessageID string
	// Confirmed is true when the broker acknowledged the publish.
	Confirmed bool
	// Routed is false when a mandatory message was returned unroutable.
	Routed bool
	// Err says why the message did not land; nil when Confirmed and Routed.
	Err error
}

// PublishError accounts, message by message, for a write or commit that did not
// land whole. errors.Is sees through it to each message's error, so
// errors.Is(err, ErrUnroutable) tells whether any message was unroutable.
type PublishError struct {
	Results []PublishResult
}

// Failed returns the results that did not land.
func (e *PublishError) Failed() []PublishResult {
	var failed []PublishResult
	for _, r := range e.Results {
		if r.Err != nil {
			failed = append(failed, r)
		}
	}
	return failed
}

// Error says how many failed, how many landed, and the first failure.
func (e *PublishError) Error() string {
	failed := e.Failed()
	landed := len(e.Results) - len(failed)
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d messages were not confirmed; %d were.", len(failed), len(e.Results), landed)
	if len(failed) > 0 {
		fmt.Fprintf(&b, " The first failure was: %v", failed[0].Err)
	}
	return b.String()
}

// Unwrap exposes each message's error to errors.Is and errors.As.
func (e *PublishError) Unwrap() []error {
	var errs []error
	for _, r := range e.Results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return errs
}

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

// ErrWireLimit reports a dispatch refused before anything was sent or stored
// because one of its fields cannot travel on AMQP: a short string over 255
// bytes, a header value of a type an AMQP table cannot carry, a header block
// larger than a frame, or a payload over the broker's maximum message size.
// Only that message is refused; the connection is never put at risk. The
// error is a *FieldError that names the field and its limit.
var ErrWireLimit = errors.New("messaging: the message does not fit the AMQP wire format")

// FieldError names the field of a dispatch that broke a wire limit. errors.Is
// matches it against ErrWireLimit.
type FieldError struct {
	// MessageID is the dispatch's id, shortened for display; may be empty.
	MessageID string
	// Field names the offending part: "MessageID", "RoutingKey", "header name",
	// `header "x-trace"`, "Payload", ...
	Field string
	// Size is the field's size in bytes (0 when the problem is its type).
	Size int
	// Limit is the largest size the wire allows (0 when the problem is its type).
	Limit int
	// Problem, when set, replaces the size sentence (a type the wire cannot carry).
	Problem string
}

// Error says which field, why, and what to do.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("messaging: refused a message")
	if e.MessageID != "" {
		fmt.Fprintf(&b, " (id %q)", e.MessageID)
	}
	if e.Problem != "" {
		fmt.Fprintf(&b, ": %s %s; nothing was sent or stored", e.Field, e.Problem)
		return b.String()
	}
	fmt.Fprintf(&b, ": %s is %d bytes and AMQP carries at most %d; shorten it (nothing was sent or stored)", e.Field, e.Size, e.Limit)
	return b.String()
}

// Is matches ErrWireLimit.
func (e *FieldError) Is(target error) bool { return target == ErrWireLimit }

// outageError marks a failure of a dependency rather than of a message.
type outageError struct{ err error }

func (o outageError) Error() string { return o.err.Error() }
func (o outageError) Unwrap() error { return o.err }

// Outage marks err as the failure of a dependency (the database or the broker
// unreachable, a transaction that cannot begin, a commit the database did not
// answer), not of the message being handled. The retry and settlement decorators never spend a message's
// budget on an outage and never dead-letter for one: they hold the messages
// and back off until the dependency answers. Outage(nil) is nil.
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
// dependency's failure: a refused, reset or timed-out network connection, a
// bad driver connection, or one of this module's broker timeouts, lost
// confirms and paused publishing. A Fatal mark wins over everything.
func IsOutage(err error) bool {
	if err == nil || IsFatal(err) {
		return false
	}
	var o outageError
	if errors.As(err, &o) {
		return true
	}
	return isDependencyFailure(err)
}
