package rabbitmq_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// The AceMQ family's key-routed topic: a stream bound to exchange orders
// with key order.* (no kind given) declares orders as a topic exchange, as
// rabbitmqctl lists it; a Topics entry beside it is still a fanout exchange.
func TestABindingWithAKeyDeclaresATopicExchangeOnRabbitMQ(t *testing.T) {
	url := testenv.Broker(t)
	b := newBroker(t, url)
	queue := b.queue("orders.new")
	orders, audit := testenv.Name(t, "orders"), testenv.Name(t, "audit")
	b.deleteExchangeAtEnd(orders)
	b.deleteExchangeAtEnd(audit)

	streamOver(t, url, nil, messaging.StreamConfig{StreamName: queue, EstablishTopology: true, BufferCapacity: 1,
		Topics: []string{audit}, Bindings: []messaging.StreamBinding{{Exchange: orders, Key: "order.*"}}})

	for exchange, kind := range map[string]string{orders: "topic", audit: "fanout"} {
		if line := listedExchange(t, exchange); line != exchange+"\t"+kind {
			t.Fatalf("rabbitmqctl list_exchanges name type lists %q; want %s of kind %s", line, exchange, kind)
		}
	}
}

// An exchange that exists as fanout where a keyed binding declares a topic
// exchange is used as it is, with one WARN in the broker's words that says the
// queue was not bound to it.
func TestAKeyedBindingOnAnExistingFanoutExchangeIsWarnedOnRabbitMQ(t *testing.T) {
	url := testenv.Broker(t)
	b := newBroker(t, url)
	queue := b.queue("orders.new")
	orders := b.exchange("orders", amqp.ExchangeFanout)
	logs := &testenv.LogBuffer{}

	streamOver(t, url, logs, messaging.StreamConfig{StreamName: queue, EstablishTopology: true, BufferCapacity: 1,
		Bindings: []messaging.StreamBinding{{Exchange: orders, Key: "order.*"}}})

	for _, want := range []string{
		`declare exchange \"` + orders + `\": it already exists with other properties`,
		`is not bound to it with key \"order.*\"`,
		"inequivalent arg 'type' for exchange",
	} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("the logs do not say %q:\n%s", want, logs.String())
		}
	}
	if line := listedExchange(t, orders); line != orders+"\tfanout" {
		t.Fatalf("rabbitmqctl list_exchanges name type lists %q; want %s still fanout", line, orders)
	}
}

// readerOn connects through the transport, logging into logs when it is not
// nil, and opens a reader; everything is closed when the test ends, and the
// context bounds the test's calls.
func readerOn(t *testing.T, url string, logs *testenv.LogBuffer) (context.Context, messaging.Connection, messaging.Reader) {
	t.Helper()
	options := []rabbitmq.Option{rabbitmq.Options.Address(url)}
	if logs != nil {
		options = append(options, rabbitmq.Options.Logger(slog.New(slog.NewTextHandler(logs, nil))))
	}
	transport := rabbitmq.New(options...)
	t.Cleanup(func() { _ = transport.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	reader, err := conn.Reader(ctx)
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	return ctx, conn, reader
}

// streamOver opens a stream of config through readerOn.
func streamOver(t *testing.T, url string, logs *testenv.LogBuffer, config messaging.StreamConfig) {
	t.Helper()
	ctx, _, reader := readerOn(t, url, logs)
	if _, err := reader.Stream(ctx, config); err != nil {
		t.Fatalf("open stream %s: %v", config.StreamName, err)
	}
}

// listed is the rabbitmqctl list_{what} line of name, with columns (name first).
func listed(t *testing.T, what, name string, columns ...string) string {
	t.Helper()
	out := testenv.Rabbitmqctl(t, append([]string{"list_" + what, "--quiet", "--no-table-headers", "name"}, columns...)...)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, name+"\t") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatalf("rabbitmqctl does not list %s %s:\n%s", what, name, out)
	return ""
}

// listedExchange is the rabbitmqctl list_exchanges line (name, type) of exchange.
func listedExchange(t *testing.T, exchange string) string {
	t.Helper()
	return listed(t, "exchanges", exchange, "type")
}
