package serialization

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// TestBrokerRoundTrip publishes through the serializing CommitWriter over the
// real broker and reads back through the serializing stream: the message type
// and content type survive the wire, a good payload decodes to the registered
// value, and a bad one arrives marked undecodable instead of failing Read.
func TestBrokerRoundTrip(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "serialization")
	typeName := testenv.Name(t, "order-placed") // also the exchange: Topic defaults to the type name
	t.Cleanup(func() { deleteTopology(t, url, queue, typeName) })

	quiet := slog.New(slog.DiscardHandler)
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	connector := New(transport,
		Options.ReadTypes(map[string]reflect.Type{typeName: reflect.TypeOf(orderPlaced{})}),
		Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(orderPlaced{}): typeName}),
		Options.Logger(quiet),
	)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connection, err := connector.Connect(ctx)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() { _ = connection.Close() }()
	reader, err := connection.Reader(ctx)
	if err != nil {
		t.Fatalf("open reader: %v", err)
	}
	defer func() { _ = reader.Close() }()
	stream, err := reader.Stream(ctx, messaging.StreamConfig{
		StreamName: queue, Topics: []string{typeName}, EstablishTopology: true, BufferCapacity: 4,
	})
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	defer func() { _ = stream.Close() }()

	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		t.Fatalf("open commit writer: %v", err)
	}
	defer func() { _ = writer.Close() }()
	if _, err := writer.Write(ctx,
		messaging.Dispatch{Message: orderPlaced{OrderID: 42, Note: "fragile"}, Mandatory: true},
		messaging.Dispatch{Topic: typeName, MessageType: typeName, ContentType: JSONContentType, Payload: []byte("{not json"), Mandatory: true},
	); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := writer.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}

	var good, bad messaging.Delivery
	if err := stream.Read(ctx, &good); err != nil {
		t.Fatalf("read the good message: %v", err)
	}
	if err := stream.Read(ctx, &bad); err != nil {
		t.Fatalf("read the bad message: Read must not fail on an undecodable payload: %v", err)
	}
	if err := stream.Acknowledge(ctx, good, bad); err != nil {
		t.Fatalf("acknowledge: %v", err)
	}

	if good.Message != (orderPlaced{OrderID: 42, Note: "fragile"}) || good.Undecodable != nil {
		t.Errorf("good delivery: Message %#v, Undecodable %v", good.Message, good.Undecodable)
	}
	if good.MessageType != typeName || good.ContentType != JSONContentType {
		t.Errorf("good delivery: type %q content type %q, want %q %q", good.MessageType, good.ContentType, typeName, JSONContentType)
	}
	if bad.Message != nil || !errors.Is(bad.Undecodable, ErrDeserialization) {
		t.Errorf("bad delivery: Message %#v, Undecodable %v; want nil and ErrDeserialization", bad.Message, bad.Undecodable)
	}
}

func deleteTopology(t *testing.T, url, queue, exchange string) {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(10 * time.Second)})
	if err != nil {
		t.Errorf("clean up: dial: %v", err)
		return
	}
	defer func() { _ = conn.Close() }()
	ch, err := conn.Channel()
	if err != nil {
		t.Errorf("clean up: channel: %v", err)
		return
	}
	if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
		t.Errorf("clean up: delete queue %s: %v", queue, err)
	}
	if err := ch.ExchangeDelete(exchange, false, false); err != nil {
		t.Errorf("clean up: delete exchange %s: %v", exchange, err)
	}
}
