package deadletter_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	. "github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/internal/testenv"
)

// TestBrokerAForeignMessageWithAnOverLongEnvelopeHeaderIsSetAsideOnce: a
// message published by anyone with a 300-byte x-acemq-id, -correlation or
// -type (too long for the AMQP property the copy would put it in) lands once
// in .dlq or .parked with the whole value in its header, and is not
// redelivered: before, the copy's publish closed the connection and the
// message looped for ever.
func TestBrokerAForeignMessageWithAnOverLongEnvelopeHeaderIsSetAsideOnce(t *testing.T) {
	long := strings.Repeat("€", 100) // 300 bytes: fits varchar(255) characters, not a short string
	cases := []struct {
		name, header, target string
	}{
		{"id", "x-acemq-id", ".dlq"},
		{"correlation", "x-acemq-correlation", ".dlq"},
		{"type", "x-acemq-type", ".parked"}, // no reader knows the type: parked
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := testenv.Broker(t)
			queue := testenv.Name(t, "foreign-"+c.name)
			b := newBroker(t, url, queue)
			headers := amqp.Table{"x-acemq-type": "order", "x-app": "kept"}
			headers[c.header] = long
			b.publishRaw(queue, amqp.Publishing{Headers: headers, ContentType: "application/json", Body: []byte(`{"n":7}`)})

			var mu sync.Mutex
			seen := 0
			consumer := run(t, url, queue, func(transport messaging.Connector) messaging.Handler {
				settle := New(transport, messaging.HandlerFunc(func(context.Context, ...any) {
					panic(messaging.Fatal(errors.New("refused by this service")))
				}), Options.Logger(quiet))
				return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
					mu.Lock()
					seen += len(messages)
					mu.Unlock()
					settle.Handle(ctx, messages...)
				})
			})
			// run waited for the stream to open, which declared .dlq and
			// .parked. A delivery that does not decode never reaches the
			// handler: the runtime's own settlement parks it.
			want := 1
			if c.target == ".parked" {
				want = 0
			}
			copied := b.get(queue+c.target, 15*time.Second)
			// Close ends the session: a message whose copy had failed would
			// be left unacknowledged and back in the source queue below.
			_ = consumer.Close()

			if got, _ := copied.Headers[c.header].(string); got != long {
				t.Fatalf("the copy's %s header is %q; want the 300-byte original", c.header, got)
			}
			if string(copied.Body) != `{"n":7}` || copied.Headers["x-app"] != "kept" {
				t.Fatalf("the copy is not the original: body %s, headers %v", copied.Body, copied.Headers)
			}
			if reason, _ := copied.Headers["x-acemq-error"].(string); reason == "" {
				t.Fatalf("the copy carries no reason: %v", copied.Headers)
			}
			mu.Lock()
			defer mu.Unlock()
			if seen != want {
				t.Fatalf("the message was handed to the handler %d times before it was set aside and acknowledged; want %d (no redelivery loop)", seen, want)
			}
			if depth := b.depth(queue + c.target); depth != 0 {
				t.Fatalf("%d more copies in %s", depth, queue+c.target)
			}
			if depth := b.depth(queue); depth != 0 {
				t.Fatalf("the source queue still holds %d messages", depth)
			}
		})
	}
}

func (b *broker) publishRaw(queue string, message amqp.Publishing) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	message.DeliveryMode = amqp.Persistent
	confirm, err := b.ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, message)
	if err != nil {
		b.t.Fatalf("publish to %s: %v", queue, err)
	}
	if ok, err := confirm.WaitContext(ctx); err != nil || !ok {
		b.t.Fatalf("publish to %s not confirmed: %v", queue, err)
	}
}
