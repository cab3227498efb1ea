package transporttest_test

import (
	"testing"

	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/transporttest"
	"github.com/warrenmq/messaging/rabbitmq"
)

// maxPayload is the small maximum payload the suite runs with, so that its
// over-limit payload costs 64 KiB, not 128 MiB.
const maxPayload = 64 << 10

func TestRabbitMQPassesTheTransportSuite(t *testing.T) {
	transporttest.Run(t, rabbitMQTarget)
}

// rabbitMQTarget is a connector to the local broker, under its shared lock.
func rabbitMQTarget(t *testing.T) transporttest.Target {
	address := testenv.Broker(t)
	return transporttest.Target{
		Connector:  rabbitmq.New(rabbitmq.Options.Address(address), rabbitmq.Options.MaxMessageSize(maxPayload)),
		MaxPayload: maxPayload,
	}
}
