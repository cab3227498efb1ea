package memory

import (
	"fmt"

	"github.com/warrenmq/messaging"
)

// AMQP reply codes the in-memory broker reports, with the names RabbitMQ uses.
// Refusals are *messaging.BrokerError values carrying one of these codes; test
// them with errors.Is against messaging.ErrNotFound, ErrPreconditionFailed,
// ErrAccessRefused, ErrResourceLocked or ErrUnroutable.
const (
	CodeNoRoute            = messaging.ReplyNoRoute
	CodeAccessRefused      = messaging.ReplyAccessRefused
	CodeNotFound           = messaging.ReplyNotFound
	CodeResourceLocked     = messaging.ReplyResourceLocked
	CodePreconditionFailed = messaging.ReplyPreconditionFailed
	codeCommandInvalid     = 503
)

// refusal is a broker refusal worded like RabbitMQ's reply text:
// "NOT_FOUND - no queue 'orders' in vhost '/'".
func refusal(code int, name, format string, args ...any) error {
	return &messaging.BrokerError{Code: code, Text: name + " - " + fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return refusal(CodeNotFound, "NOT_FOUND", format, args...)
}

func preconditionFailed(format string, args ...any) error {
	return refusal(CodePreconditionFailed, "PRECONDITION_FAILED", format, args...)
}

func accessRefused(format string, args ...any) error {
	return refusal(CodeAccessRefused, "ACCESS_REFUSED", format, args...)
}

func resourceLocked(format string, args ...any) error {
	return refusal(CodeResourceLocked, "RESOURCE_LOCKED", format, args...)
}

func commandInvalid(format string, args ...any) error {
	return refusal(codeCommandInvalid, "COMMAND_INVALID", format, args...)
}

func unroutable(id, exchange, key string) error {
	return fmt.Errorf("memory: message %s to exchange %q with key %q reached no queue (%d NO_ROUTE); the broker dropped it, so bind a queue to the exchange or publish without Mandatory: %w",
		id, exchange, key, CodeNoRoute, messaging.ErrUnroutable)
}

func closedError(what string) error {
	return fmt.Errorf("memory: the %s is closed; open a new one: %w", what, messaging.ErrClosed)
}
