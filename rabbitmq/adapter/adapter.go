// Package adapter is a thin layer of interfaces over github.com/rabbitmq/amqp091-go.
// It exposes only the methods the rabbitmq transport calls, so that package can be
// tested with hand-written fakes. Applications touch it only in tests, through
// rabbitmq.Options.Dialer.
package adapter

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Dialer opens AMQP connections.
type Dialer interface {
	// Dial connects to address and completes the AMQP handshake. It returns no later
	// than shortly after ctx ends: an implementation closes its socket when ctx ends
	// so a stalled handshake cannot hold the caller.
	Dial(ctx context.Context, address string, config amqp.Config) (Connection, error)
}

// Connection is the part of *amqp091.Connection the transport uses, plus Sever.
type Connection interface {
	// Channel opens a new channel on the connection.
	Channel() (Channel, error)
	// NotifyClose registers a listener for the connection's close; see amqp091.
	NotifyClose(receiver chan *amqp.Error) chan *amqp.Error
	// NotifyBlocked registers a listener for connection.blocked and .unblocked.
	NotifyBlocked(receiver chan amqp.Blocking) chan amqp.Blocking
	// Close closes the connection gracefully (connection.close and its -ok).
	Close() error
	// Sever closes the network connection at once, without the AMQP close
	// handshake. It is the only way to make a pending call on the connection or one
	// of its channels return.
	Sever() error
}

// Channel is the part of *amqp091.Channel the transport uses.
type Channel interface {
	Confirm(noWait bool) error
	NotifyPublish(confirm chan amqp.Confirmation) chan amqp.Confirmation
	NotifyReturn(returns chan amqp.Return) chan amqp.Return
	NotifyClose(receiver chan *amqp.Error) chan *amqp.Error
	Publish(exchange, key string, mandatory, immediate bool, msg amqp.Publishing) error

	ExchangeDeclare(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error
	QueueDeclare(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error)
	ExchangeDeclarePassive(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error
	ExchangeDelete(name string, ifUnused, noWait bool) error
	QueueDeclarePassive(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error)
	QueueDelete(name string, ifUnused, ifEmpty, noWait bool) (int, error)
	QueueBind(name, key, exchange string, noWait bool, args amqp.Table) error
	Get(queue string, autoAck bool) (amqp.Delivery, bool, error)
	Qos(prefetchCount, prefetchSize int, global bool) error
	Consume(queue, consumer string, autoAck, exclusive, noLocal, noWait bool, args amqp.Table) (<-chan amqp.Delivery, error)
	Cancel(consumer string, noWait bool) error
	Ack(tag uint64, multiple bool) error
	// Nack is basic.nack; with requeue the broker returns the delivery to its
	// queue.
	Nack(tag uint64, multiple, requeue bool) error
	Close() error
}
