package rabbitmq

import (
	"errors"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

// The sentinels a bounded wait returns when the broker timeout passes and the
// connection is severed; they are the root package's, re-exported for callers
// that import only this package.
var (
	ErrCommitTimeout      = messaging.ErrCommitTimeout
	ErrPublishTimeout     = messaging.ErrPublishTimeout
	ErrAcknowledgeTimeout = messaging.ErrAcknowledgeTimeout
	ErrCloseTimeout       = messaging.ErrCloseTimeout
	ErrConnectTimeout     = messaging.ErrConnectTimeout
)

// refusal turns an amqp091 error that carries the broker's reply code into a
// *messaging.BrokerError for op, keeping the *amqp.Error in its chain so
// errors.As to it still works. Errors without a reply code, amqp.ErrClosed
// (the client's "not open"), and errors already converted pass unchanged.
// With fromServer, only an error the broker sent is converted; a close
// notification or a refused handshake passes false, since amqp091 reports
// those (403 credentials, 501 frame error, ...) as client-built values.
func refusal(op string, err error, fromServer bool) error {
	if err == nil { // before the target below, which errors.As makes escape: no allocation for a success
		return nil
	}
	var amqpErr *amqp.Error
	if !errors.As(err, &amqpErr) || amqpErr == amqp.ErrClosed || amqpErr.Code == 0 {
		return err
	}
	if fromServer && !amqpErr.Server {
		return err
	}
	var converted *messaging.BrokerError
	if errors.As(err, &converted) {
		return err
	}
	return &messaging.BrokerError{Code: amqpErr.Code, Text: amqpErr.Reason, Op: op, Err: err}
}
