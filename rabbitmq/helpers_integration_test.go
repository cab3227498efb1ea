package rabbitmq_test

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// broker is a raw amqp091 connection a test uses to set up and inspect the
// broker independently of the transport under test.
type broker struct {
	t   *testing.T
	url string
}

func newBroker(t *testing.T, url string) *broker { return &broker{t: t, url: url} }

// do runs f on a fresh connection and channel, so a channel error in f (a
// passive declare of a missing queue) cannot spoil later calls.
func (b *broker) do(f func(ch *amqp.Channel) error) error {
	b.t.Helper()
	conn, err := amqp.Dial(b.url)
	if err != nil {
		b.t.Fatalf("dial %s: %v; `make services` starts RabbitMQ", b.url, err)
	}
	defer func() { _ = conn.Close() }()
	ch, err := conn.Channel()
	if err != nil {
		b.t.Fatalf("open channel: %v", err)
	}
	return f(ch)
}

// queue declares a durable classic queue deleted when the test ends.
func (b *broker) queue(prefix string) string {
	b.t.Helper()
	name := testenv.Name(b.t, prefix)
	if err := b.do(func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(name, true, false, false, false, nil)
		return err
	}); err != nil {
		b.t.Fatalf("declare queue %s: %v", name, err)
	}
	b.deleteQueueAtEnd(name)
	return name
}

func (b *broker) deleteQueueAtEnd(name string) {
	b.t.Cleanup(func() {
		_ = b.do(func(ch *amqp.Channel) error { _, err := ch.QueueDelete(name, false, false, false); return err })
	})
}

func (b *broker) deleteExchangeAtEnd(name string) {
	b.t.Cleanup(func() {
		_ = b.do(func(ch *amqp.Channel) error { return ch.ExchangeDelete(name, false, false) })
	})
}

// exchange declares a durable exchange of kind, deleted when the test ends.
func (b *broker) exchange(prefix, kind string) string {
	b.t.Helper()
	name := testenv.Name(b.t, prefix)
	if err := b.do(func(ch *amqp.Channel) error {
		return ch.ExchangeDeclare(name, kind, true, false, false, false, nil)
	}); err != nil {
		b.t.Fatalf("declare exchange %s: %v", name, err)
	}
	b.deleteExchangeAtEnd(name)
	return name
}

func (b *broker) bind(queue, key, exchange string) {
	b.t.Helper()
	if err := b.do(func(ch *amqp.Channel) error { return ch.QueueBind(queue, key, exchange, false, nil) }); err != nil {
		b.t.Fatalf("bind %s to %s: %v", queue, exchange, err)
	}
}

// count returns the ready messages in queue.
func (b *broker) count(queue string) int {
	b.t.Helper()
	var n int
	if err := b.do(func(ch *amqp.Channel) error {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		n = q.Messages
		return err
	}); err != nil {
		b.t.Fatalf("inspect queue %s: %v", queue, err)
	}
	return n
}

// exists reports whether the queue exists, with the arguments it was declared with
// when it does.
func (b *broker) exists(queue string) bool {
	return b.do(func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		return err
	}) == nil
}

// get takes one message from queue, acknowledging it.
func (b *broker) get(queue string) (amqp.Delivery, bool) {
	b.t.Helper()
	var d amqp.Delivery
	var ok bool
	if err := b.do(func(ch *amqp.Channel) (err error) {
		d, ok, err = ch.Get(queue, true)
		return err
	}); err != nil {
		b.t.Fatalf("get from %s: %v", queue, err)
	}
	return d, ok
}

// connect opens a connection through the transport, closed when the test ends.
func connect(t *testing.T, url string, options ...any) messaging.Connection {
	t.Helper()
	connector := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.BrokerTimeout(10*time.Second))
	t.Cleanup(func() { _ = connector.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := connector.Connect(ctx)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return conn
}

func openWriter(t *testing.T, conn messaging.Connection) messaging.Writer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	w, err := conn.Writer(ctx)
	if err != nil {
		t.Fatalf("open writer: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// settle is how long a test waits for what the broker does on its own (a
// TTL passing, a close it delivers, a count reaching its total): long enough
// for a machine busy with other test programs, and only a failing test
// waits for all of it.
const settle = 30 * time.Second
