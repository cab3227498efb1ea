package rabbitmq_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// A write refused for a wire limit leaves its connection alone: a stream on
// the same connection reads what was published before and after it, and the
// writer that was refused keeps publishing.
func TestAConnectionSurvivesARefusedWriteWhileAStreamOnItKeepsReading(t *testing.T) {
	url := testenv.Broker(t)
	queue := newBroker(t, url).queue("survives")
	const maxPayload = 16 << 10
	connector := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.BrokerTimeout(10*time.Second), rabbitmq.Options.MaxMessageSize(maxPayload))
	t.Cleanup(func() { _ = connector.Close() })
	conn, err := connector.Connect(testContext(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	s := openStream(t, conn, messaging.StreamConfig{StreamName: queue, BufferCapacity: 10, BatchCapacity: 10})
	w := openWriter(t, conn)
	other := openWriter(t, conn)
	good := func(payload string) messaging.Dispatch {
		return messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: []byte(payload)}
	}
	if _, err := w.Write(testContext(t), good("before")); err != nil {
		t.Fatalf("write before: %v", err)
	}
	long := strings.Repeat("€", 100)
	for name, bad := range map[string]messaging.Dispatch{
		"message id":     {RoutingKey: queue, MessageID: long},
		"routing key":    {RoutingKey: long},
		"correlation id": {RoutingKey: queue, CorrelationID: long},
		"content type":   {RoutingKey: queue, ContentType: long},
		"message type":   {RoutingKey: queue, MessageType: long},
		"header name":    {RoutingKey: queue, Headers: map[string]any{long: "v"}},
		"header value":   {RoutingKey: queue, Headers: map[string]any{"x-odd": struct{}{}}},
		"payload":        {RoutingKey: queue, Payload: make([]byte, maxPayload+1)},
	} {
		n, err := w.Write(testContext(t), bad)
		if n != 0 || !errors.Is(err, messaging.ErrWireLimit) {
			t.Fatalf("a write with a 300-byte %s = %d, %v; want 0 and ErrWireLimit", name, n, err)
		}
	}
	if _, err := w.Write(testContext(t), good("after")); err != nil {
		t.Fatalf("the refused writer's next write: %v", err)
	}
	if _, err := other.Write(testContext(t), good("other")); err != nil {
		t.Fatalf("another writer on the connection: %v", err)
	}
	var got []string
	for range 3 {
		d := read(t, s)
		got = append(got, string(d.Payload))
		if err := s.Acknowledge(testContext(t), d); err != nil {
			t.Fatalf("acknowledge: %v", err)
		}
	}
	if strings.Join(got, ",") != "before,after,other" {
		t.Fatalf("the stream read %v; want before, after, other", got)
	}
}

// The broker's own max_message_size, when lower than the writer's
// MaxMessageSize, makes the broker refuse the publish (406
// PRECONDITION_FAILED), which closes that writer's channel but never the
// connection; setting MaxMessageSize to the broker's value refuses the message
// before it is sent, with the channel kept.
func TestAPayloadOverTheBrokersMaximumClosesTheChannelOnlyAndTheOptionPreventsIt(t *testing.T) {
	url := testenv.Disrupt(t) // changes the broker's max_message_size for everyone
	queue := newBroker(t, url).queue("broker-max")
	const brokerMax = 8 << 10
	t.Cleanup(func() {
		testenv.Rabbitmqctl(t, "-q", "eval", "application:set_env(rabbit, max_message_size, 134217728).")
	})
	testenv.Rabbitmqctl(t, "-q", "eval", "application:set_env(rabbit, max_message_size, 8192).")

	conn := connect(t, url)
	s := openStream(t, conn, messaging.StreamConfig{StreamName: queue, BufferCapacity: 10, BatchCapacity: 10})
	w := openWriter(t, conn) // default MaxMessageSize: 128 MiB, over the broker's
	n, err := w.Write(testContext(t), messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: make([]byte, brokerMax+1)})
	var amqpErr *amqp.Error
	if n != 0 || !errors.Is(err, messaging.ErrPreconditionFailed) || !errors.As(err, &amqpErr) || amqpErr.Code != amqp.PreconditionFailed {
		t.Fatalf("a payload over the broker's maximum = %d, %v; want 0 and the broker's 406 PRECONDITION_FAILED", n, err)
	}
	t.Logf("the broker's refusal: %v", err)
	if _, err := openWriter(t, conn).Write(testContext(t), messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: []byte("same connection")}); err != nil {
		t.Fatalf("a new writer on the same connection: %v", err)
	}
	if d := read(t, s); string(d.Payload) != "same connection" {
		t.Fatalf("read %q; want %q", d.Payload, "same connection")
	}

	connector := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.MaxMessageSize(brokerMax))
	t.Cleanup(func() { _ = connector.Close() })
	matched, err := connector.Connect(testContext(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	mw := openWriter(t, matched)
	n, err = mw.Write(testContext(t),
		messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: make([]byte, brokerMax+1)},
		messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: []byte("kept")})
	if n != 1 || !errors.Is(err, messaging.ErrWireLimit) {
		t.Fatalf("with MaxMessageSize at the broker's maximum = %d, %v; want 1 landed and ErrWireLimit", n, err)
	}
	if _, err := mw.Write(testContext(t), messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: []byte("still open")}); err != nil {
		t.Fatalf("the writer's channel did not stay open: %v", err)
	}
	for _, want := range []string{"kept", "still open"} {
		if d := read(t, s); string(d.Payload) != want {
			t.Fatalf("read %q; want %q", d.Payload, want)
		}
	}
}

// A foreign message whose x-acemq-id, -correlation and -type headers are 300
// bytes is read whole, and its Verbatim copy (Delivery.Redispatch, as
// settlement sets a message aside) is published, those values travelling in
// their headers alone, and read back whole.
func TestAForeignMessageWithOverLongEnvelopeHeadersCanBeSetAside(t *testing.T) {
	url := testenv.Broker(t)
	b := newBroker(t, url)
	source, aside := b.queue("foreign"), b.queue("foreign-aside")
	long := func(what string) string { return what + "-" + strings.Repeat("€", 100) }
	if err := b.do(func(ch *amqp.Channel) error {
		return ch.Publish("", source, true, false, amqp.Publishing{Body: []byte("foreign"), Headers: amqp.Table{
			"x-acemq-id": long("id"), "x-acemq-correlation": long("correlation"), "x-acemq-type": long("type"),
		}})
	}); err != nil {
		t.Fatalf("publish the foreign message: %v", err)
	}
	conn := connect(t, url)
	in := openStream(t, conn, messaging.StreamConfig{StreamName: source, BufferCapacity: 1, BatchCapacity: 1})
	d := read(t, in)
	if d.MessageID != long("id") || d.CorrelationID != long("correlation") || d.MessageType != long("type") {
		t.Fatalf("read the foreign envelope cut or changed: id %d bytes, correlation %d, type %d", len(d.MessageID), len(d.CorrelationID), len(d.MessageType))
	}
	if _, err := openWriter(t, conn).Write(testContext(t), d.Redispatch(aside)); err != nil {
		t.Fatalf("set the foreign message aside: %v", err)
	}
	if err := in.Acknowledge(testContext(t), d); err != nil {
		t.Fatalf("acknowledge the original: %v", err)
	}
	out := openStream(t, conn, messaging.StreamConfig{StreamName: aside, BufferCapacity: 1, BatchCapacity: 1})
	copied := read(t, out)
	if copied.MessageID != d.MessageID || copied.CorrelationID != d.CorrelationID || copied.MessageType != d.MessageType || string(copied.Payload) != "foreign" {
		t.Fatalf("the set-aside copy differs: id %d bytes, correlation %d, type %d, payload %q", len(copied.MessageID), len(copied.CorrelationID), len(copied.MessageType), copied.Payload)
	}
	if raw, ok := copied.Upstream.(amqp.Delivery); !ok || raw.MessageId != "" || raw.Type != "" || raw.CorrelationId != "" {
		t.Fatalf("the copy's over-long values must travel in their headers alone, not in the AMQP properties")
	}
}

// A password holding '#', '@' and ':' appears in no error, no monitor callback
// and no log line, whether the address is given raw (it does not parse) or
// percent-encoded (the broker refuses it).
func TestAPasswordWithHashAtAndColonIsNeverPrinted(t *testing.T) {
	testenv.Broker(t)
	const password = "p#a@s:s"
	logs := &testenv.LogBuffer{}
	monitor := &errorMonitor{}
	for _, address := range []string{
		"amqp://guest:" + password + "@127.0.0.1:5672/",
		"amqp://guest:p%23a%40s%3As@127.0.0.1:5672/",
	} {
		connector := rabbitmq.New(rabbitmq.Options.Address(address), rabbitmq.Options.Monitor(monitor),
			rabbitmq.Options.Logger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
			rabbitmq.Options.BrokerTimeout(10*time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, err := connector.Connect(ctx)
		cancel()
		_ = connector.Close()
		if err == nil {
			t.Fatalf("connect as guest with password %q succeeded; want a refusal", password)
		}
		t.Logf("%v", err)
		monitor.add(err)
	}
	everything := monitor.text() + logs.String()
	for _, piece := range []string{password, "p%23a%40s%3As", "p#a", "a@s", "s:s", "p%23", "%40s"} {
		if strings.Contains(everything, piece) {
			t.Errorf("the output holds %q:\n%s", piece, everything)
		}
	}
	if !strings.Contains(monitor.text(), "amqp://guest:xxxxx@127.0.0.1:5672/") {
		t.Errorf("the errors do not name the masked address:\n%s", monitor.text())
	}
}

// errorMonitor keeps the text of every error the transport reported.
type errorMonitor struct {
	rabbitmq.NopMonitor
	mu    sync.Mutex
	texts []string
}

func (m *errorMonitor) ConnectionOpened(err error) { m.add(err) }

func (m *errorMonitor) add(err error) {
	if err == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.texts = append(m.texts, err.Error())
}

func (m *errorMonitor) text() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.texts, "\n")
}
