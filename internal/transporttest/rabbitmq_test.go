package transporttest_test

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/transporttest"
	"github.com/warrenmq/messaging/rabbitmq"
)

// maxPayload is the small maximum payload the suite runs with, so that its
// over-limit payload costs 64 KiB, not 128 MiB.
const maxPayload = 64 << 10

func TestRabbitMQPassesTheTransportSuite(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transporttest.Target {
		address := testenv.Broker(t)
		return transporttest.Target{
			Connector:  rabbitmq.New(rabbitmq.Options.Address(address), rabbitmq.Options.MaxMessageSize(maxPayload)),
			Topology:   dial(t, address),
			MaxPayload: maxPayload,
		}
	})
}

// topology declares and deletes through its own AMQP connection, a fresh
// channel per call because a refused call closes its channel.
type topology struct{ conn *amqp.Connection }

func dial(t *testing.T, address string) topology {
	t.Helper()
	conn, err := amqp.DialConfig(address, amqp.Config{Dial: amqp.DefaultDial(10 * time.Second)})
	if err != nil {
		t.Fatalf("cannot reach RabbitMQ at %s: %v; is it running? `make services` starts it", address, err)
	}
	// Registered before the suite's cleanups, so it runs after they delete.
	t.Cleanup(func() { _ = conn.Close() })
	return topology{conn: conn}
}

func (x topology) with(do func(*amqp.Channel) error) error {
	ch, err := x.conn.Channel()
	if err != nil {
		return err
	}
	defer func() { _ = ch.Close() }()
	return do(ch)
}

func (x topology) DeclareExchange(name, kind string, durable bool) error {
	return x.with(func(ch *amqp.Channel) error {
		return ch.ExchangeDeclare(name, kind, durable, false, false, false, nil)
	})
}

func (x topology) Bind(queue, exchange, key string) error {
	return x.with(func(ch *amqp.Channel) error {
		return ch.QueueBind(queue, key, exchange, false, nil)
	})
}

func (x topology) DeleteQueue(name string) error {
	return x.with(func(ch *amqp.Channel) error {
		_, err := ch.QueueDelete(name, false, false, false)
		return err
	})
}

func (x topology) DeleteExchange(name string) error {
	return x.with(func(ch *amqp.Channel) error {
		return ch.ExchangeDelete(name, false, false)
	})
}
