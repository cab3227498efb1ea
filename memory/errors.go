package memory

import (
	"fmt"

	"github.com/warrenmq/messaging"
)

// AMQP reply codes the in-memory broker reports, with the names RabbitMQ uses.
const (
	CodeNoRoute            = 312
	CodeAccessRefused      = 403
	CodeNotFound           = 404
	CodeResourceLocked     = 405
	CodePreconditionFailed = 406
)

// Error is a broker refusal, worded like RabbitMQ's: the reply code, its name,
// and what was refused. Test for a kind with errors.As and Code.
type Error struct {
	// Code is the AMQP reply code, such as 404 or 406.
	Code int
	// Reason is the reply code's name, such as NOT_FOUND or PRECONDITION_FAILED.
	Reason string
	// Detail says what was refused and why.
	Detail string
}

// Error returns "memory: {Reason} ({Code}): {Detail}".
func (e *Error) Error() string {
	return fmt.Sprintf("memory: %s (%d): %s", e.Reason, e.Code, e.Detail)
}

func notFound(format string, args ...any) error {
	return &Error{Code: CodeNotFound, Reason: "NOT_FOUND", Detail: fmt.Sprintf(format, args...)}
}

func preconditionFailed(format string, args ...any) error {
	return &Error{Code: CodePreconditionFailed, Reason: "PRECONDITION_FAILED", Detail: fmt.Sprintf(format, args...)}
}

func accessRefused(format string, args ...any) error {
	return &Error{Code: CodeAccessRefused, Reason: "ACCESS_REFUSED", Detail: fmt.Sprintf(format, args...)}
}

func resourceLocked(format string, args ...any) error {
	return &Error{Code: CodeResourceLocked, Reason: "RESOURCE_LOCKED", Detail: fmt.Sprintf(format, args...)}
}

func unroutable(id, exchange, key string) error {
	return fmt.Errorf("memory: message %s to exchange %q with key %q reached no queue (%d NO_ROUTE); the broker dropped it, so bind a queue to the exchange or publish without Mandatory: %w",
		id, exchange, key, CodeNoRoute, messaging.ErrUnroutable)
}

func closedError(what string) error {
	return fmt.Errorf("memory: the %s is closed; open a new one: %w", what, messaging.ErrClosed)
}
