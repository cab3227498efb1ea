package messaging

import (
	"errors"
	"fmt"
)

// Broker refusals, by meaning. A transport returns a *BrokerError that matches
// one of these with errors.Is, so no caller ever matches a broker's text.
var (
	// ErrNotFound: the queue, exchange or virtual host does not exist (404).
	ErrNotFound = errors.New("messaging: the broker has no such queue, exchange or virtual host")
	// ErrPreconditionFailed: a declaration differs from what exists, or a
	// message broke a broker limit (406).
	ErrPreconditionFailed = errors.New("messaging: the broker refused a declaration or message that differs from what it holds or allows")
	// ErrAccessRefused: the user may not do this, or the credentials are wrong
	// (403 ACCESS_REFUSED, 530 NOT_ALLOWED at connect).
	ErrAccessRefused = errors.New("messaging: the broker refused access")
	// ErrResourceLocked: an exclusive queue belongs to another connection (405).
	ErrResourceLocked = errors.New("messaging: the queue is exclusive to another connection")
)

// AMQP reply codes the transports map onto the sentinels above.
const (
	ReplyNoRoute            = 312
	ReplyAccessRefused      = 403
	ReplyNotFound           = 404
	ReplyResourceLocked     = 405
	ReplyPreconditionFailed = 406
	ReplyNotAllowed         = 530
)

// BrokerError is a refusal the broker sent: its reply code and text. It
// matches ErrNotFound, ErrPreconditionFailed, ErrAccessRefused,
// ErrResourceLocked or ErrUnroutable by code with errors.Is.
type BrokerError struct {
	Code int
	Text string
	// Op names what was refused ("declare queue \"orders\""); may be empty.
	Op string
	// Err is the transport's own error behind the refusal (an amqp091
	// *amqp.Error for RabbitMQ), kept so errors.As still reaches it; may be nil.
	Err error
}

// Unwrap returns the transport's own error, or nil.
func (e *BrokerError) Unwrap() error { return e.Err }

// Error gives the operation, the code and the broker's own words.
func (e *BrokerError) Error() string {
	if e.Op != "" {
		return fmt.Sprintf("messaging: %s: the broker refused it (%d): %s", e.Op, e.Code, e.Text)
	}
	return fmt.Sprintf("messaging: the broker refused it (%d): %s", e.Code, e.Text)
}

// Is matches the sentinel of e's reply code.
func (e *BrokerError) Is(target error) bool {
	switch e.Code {
	case ReplyNotFound:
		return target == ErrNotFound
	case ReplyPreconditionFailed:
		return target == ErrPreconditionFailed
	case ReplyAccessRefused, ReplyNotAllowed:
		return target == ErrAccessRefused
	case ReplyResourceLocked:
		return target == ErrResourceLocked
	case ReplyNoRoute:
		return target == ErrUnroutable
	}
	return false
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
