package memory

import (
	"fmt"

	"github.com/warrenmq/messaging"
)

// codeCommandInvalid is AMQP's COMMAND_INVALID, which the in-memory broker
// reports for a call the protocol does not allow. Its other refusals carry the
// root's reply codes (messaging.ReplyNotFound, ...); test them with errors.Is
// against messaging.ErrNotFound, ErrPreconditionFailed, ErrAccessRefused,
// ErrResourceLocked or ErrUnroutable.
const codeCommandInvalid = 503

// refusal is a broker refusal worded like RabbitMQ's reply text:
// "NOT_FOUND - no queue 'orders' in vhost '/'".
func refusal(code int, name, format string, args ...any) error {
	return &messaging.BrokerError{Code: code, Text: name + " - " + fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return refusal(messaging.ReplyNotFound, "NOT_FOUND", format, args...)
}

func preconditionFailed(format string, args ...any) error {
	return refusal(messaging.ReplyPreconditionFailed, "PRECONDITION_FAILED", format, args...)
}

func accessRefused(format string, args ...any) error {
	return refusal(messaging.ReplyAccessRefused, "ACCESS_REFUSED", format, args...)
}

func resourceLocked(format string, args ...any) error {
	return refusal(messaging.ReplyResourceLocked, "RESOURCE_LOCKED", format, args...)
}

func commandInvalid(format string, args ...any) error {
	return refusal(codeCommandInvalid, "COMMAND_INVALID", format, args...)
}

func unroutable(id, exchange, key string) error {
	return fmt.Errorf("memory: message %s to exchange %q with key %q reached no queue (%d NO_ROUTE); the broker dropped it, so bind a queue to the exchange or publish without Mandatory: %w",
		id, exchange, key, messaging.ReplyNoRoute, messaging.ErrUnroutable)
}

func closedError(what string) error {
	return fmt.Errorf("memory: the %s is closed; open a new one: %w", what, messaging.ErrClosed)
}
