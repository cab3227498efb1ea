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
