package rabbitmq

import (
	"errors"
	"fmt"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

func TestARefusalTheBrokerSentIsABrokerErrorThatKeepsTheAMQPError(t *testing.T) {
	sent := &amqp.Error{Code: amqp.PreconditionFailed, Reason: "PRECONDITION_FAILED - inequivalent arg 'x-queue-type'", Server: true}

	err := fmt.Errorf("open stream: %w", refusal(`declare queue "q"`, sent, true))

	var refused *messaging.BrokerError
	var amqpErr *amqp.Error
	if !errors.Is(err, messaging.ErrPreconditionFailed) || !errors.As(err, &refused) || !errors.As(err, &amqpErr) || amqpErr != sent {
		t.Fatalf("refusal = %v; want a *messaging.BrokerError matching ErrPreconditionFailed with the *amqp.Error in its chain", err)
	}
	if refused.Code != amqp.PreconditionFailed || refused.Op != `declare queue "q"` || refused.Text != sent.Reason {
		t.Fatalf("refusal = %+v; want code, op and the broker's text", refused)
	}
}

func TestWhatIsNoRefusalPassesUnchanged(t *testing.T) {
	plain := errors.New("dial tcp: connection refused")
	clientBuilt := &amqp.Error{Code: amqp.FrameError, Reason: "frame could not be parsed"}
	for _, c := range []struct {
		err        error
		fromServer bool
	}{{nil, true}, {plain, false}, {amqp.ErrClosed, false}, {clientBuilt, true}} {
		if got := refusal("op", c.err, c.fromServer); got != c.err {
			t.Fatalf("refusal(%v, fromServer %t) = %v; want it unchanged", c.err, c.fromServer, got)
		}
	}
	if got := refusal("publish", clientBuilt, false); !errors.As(got, new(*messaging.BrokerError)) {
		t.Fatalf("a close notification's frame error = %v; want a *messaging.BrokerError", got)
	}
}
