package deadletter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	. "github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

var quiet = slog.New(slog.DiscardHandler)

type order struct {
	N int `json:"n"`
}

// broker is a raw amqp091 client for seeding and inspecting queues.
type broker struct {
	t    *testing.T
	conn *amqp.Connection
	ch   *amqp.Channel
}

func newBroker(t *testing.T, url, queue string) *broker {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("dial %s: %v; `make services` starts RabbitMQ", url, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("open channel: %v", err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatalf("declare %s: %v", queue, err)
	}
	t.Cleanup(func() {
		for _, name := range []string{queue, queue + ".dlq", queue + ".parked"} {
			_, _ = ch.QueueDelete(name, false, false, false)
		}
	})
	if err := ch.Confirm(false); err != nil {
		t.Fatalf("confirm mode: %v", err)
	}
	return &broker{t: t, conn: conn, ch: ch}
}

func (b *broker) publish(queue, id string, body []byte) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	confirm, err := b.ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
		MessageId: id, ContentType: "application/json", DeliveryMode: amqp.Persistent,
		Headers: amqp.Table{"x-acemq-type": "order", "x-acemq-id": id, "x-app": "kept"},
		Body:    body,
	})
	if err != nil {
		b.t.Fatalf("publish %s: %v", id, err)
	}
	if ok, err := confirm.WaitContext(ctx); err != nil || !ok {
		b.t.Fatalf("publish %s not confirmed: %v", id, err)
	}
}

func (b *broker) publishOrders(queue string, count int) []string {
	ids := make([]string, count)
	for i := range count {
		ids[i] = fmt.Sprintf("m-%05d", i)
		body, _ := json.Marshal(order{N: i})
		b.publish(queue, ids[i], body)
	}
	return ids
}

// get takes one message from queue, waiting up to within for it to arrive:
// it consumes on a channel of its own with a prefetch of one, acknowledges
// the first delivery and closes the channel, which returns nothing else.
func (b *broker) get(queue string, within time.Duration) amqp.Delivery {
	b.t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Fatalf("open a channel to read %s: %v", queue, err)
	}
	defer func() { _ = ch.Close() }()
	if err := ch.Qos(1, 0, false); err != nil {
		b.t.Fatalf("prefetch on %s: %v", queue, err)
	}
	deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		b.t.Fatalf("consume %s: %v", queue, err)
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case delivery, ok := <-deliveries:
		if !ok {
			b.t.Fatalf("the channel reading %s closed", queue)
		}
		if err := delivery.Ack(false); err != nil {
			b.t.Fatalf("acknowledge the message from %s: %v", queue, err)
		}
		return delivery
	case <-timer.C:
		b.t.Fatalf("nothing arrived in %s within %s", queue, within)
		return amqp.Delivery{}
	}
}

func (b *broker) depth(queue string) int {
	b.t.Helper()
	q, err := b.ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		b.t.Fatalf("inspect %s: %v", queue, err)
	}
	return q.Messages
}

// settlements counts the decorator's settlements by action.
type settlements struct {
	mu      sync.Mutex
	actions map[string]int
}

func (s *settlements) Settled(_, action, _ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.actions == nil {
		s.actions = map[string]int{}
	}
	s.actions[action]++
}

func (s *settlements) count(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.actions[action]
}

type ledger struct {
	mu   sync.Mutex
	seen map[string]int
	want int
	done chan struct{}
}

func newLedger(want int) *ledger {
	return &ledger{seen: map[string]int{}, want: want, done: make(chan struct{})}
}

func (l *ledger) add(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[id]++
	if len(l.seen) == l.want {
		close(l.done)
	}
}

func (l *ledger) wait(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(within):
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Fatalf("handled %d distinct of %d messages within %s", len(l.seen), l.want, within)
	}
}

// run consumes queue with handler (which receives full deliveries) through
// serialization and the real transport, until the test ends.
func run(t *testing.T, url, queue string, handler func(transport messaging.Connector) messaging.Handler) messaging.ListenCloser {
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	decoded := serialization.New(transport,
		serialization.Options.ReadTypes(map[string]reflect.Type{"order": reflect.TypeOf(order{})}),
		serialization.Options.Logger(quiet))
	worker := handler(transport)
	consumer := streaming.New(decoded, streaming.Options.Subscriptions(streaming.NewSubscription(queue,
		streaming.SubscriptionOptions.AddWorkers(worker, worker, worker),
		streaming.SubscriptionOptions.BufferCapacity(256),
		streaming.SubscriptionOptions.BatchCapacity(64),
		streaming.SubscriptionOptions.FullDeliveryToHandler(true),
		streaming.SubscriptionOptions.ReconnectDelay(50*time.Millisecond),
	)))
	listened := make(chan struct{})
	go func() {
		defer close(listened)
		consumer.Listen()
	}()
	t.Cleanup(func() {
		_ = consumer.Close()
		ReceiveWithin(t, listened, 30*time.Second, "the consumer's Listen to return after Close")
	})
	// The stream's opening declares the queue's .dlq and .parked.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatalf("the consumer of %s did not start: %v", queue, err)
	}
	return consumer
}

func TestBrokerPoisonAmongGoodMessagesIsDeadLettered(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "poison")
	b := newBroker(t, url, queue)
	ids := b.publishOrders(queue, 500)
	b.publish(queue, "poison", []byte(`{"n":-1}`))
	for i := 500; i < 1000; i++ {
		id := fmt.Sprintf("m-%05d", i)
		body, _ := json.Marshal(order{N: i})
		b.publish(queue, id, body)
		ids = append(ids, id)
	}

	good := newLedger(len(ids))
	consumer := run(t, url, queue, func(transport messaging.Connector) messaging.Handler {
		inner := messaging.HandlerFunc(func(_ context.Context, messages ...any) {
			for _, m := range messages {
				if m.(messaging.Delivery).MessageID == "poison" {
					panic(errors.New("poison pill"))
				}
			}
			for _, m := range messages {
				good.add(m.(messaging.Delivery).MessageID)
			}
		})
		return New(transport,
			retry.New(inner, retry.Options.Policy(retrypolicy.Fixed(3, time.Millisecond)), retry.Options.Logger(quiet)),
			Options.Policy(retrypolicy.Fixed(3, 0)), Options.FullDelivery(true))
	})
	good.wait(t, 30*time.Second)
	dead := b.get(queue+".dlq", 10*time.Second)
	_ = consumer.Close()

	if dead.MessageId != "poison" || string(dead.Body) != `{"n":-1}` {
		t.Fatalf("dead-lettered %q with body %s; want the poison message's original bytes", dead.MessageId, dead.Body)
	}
	if reason := dead.Headers["x-acemq-error"]; reason != "exhausted 3 attempts: poison pill" {
		t.Fatalf("x-acemq-error = %v", reason)
	}
	if attempt := fmt.Sprint(dead.Headers["x-acemq-attempt"]); attempt != "3" {
		t.Fatalf("x-acemq-attempt = %s; the copy should carry the 3 attempts its reason names", attempt)
	}
	if dead.Headers["x-app"] != "kept" {
		t.Fatalf("application header lost: %v", dead.Headers)
	}
	if depth := b.depth(queue); depth != 0 {
		t.Fatalf("source queue holds %d messages", depth)
	}
	if depth := b.depth(queue + ".dlq"); depth != 0 {
		t.Fatalf("%d more messages were dead-lettered; only the poison one should be", depth)
	}
}

func TestBrokerUndecodableBodyIsParked(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "undecodable")
	b := newBroker(t, url, queue)
	ids := b.publishOrders(queue, 20)
	b.publish(queue, "garbage", []byte(`{not json`))

	good := newLedger(len(ids))
	consumer := run(t, url, queue, func(transport messaging.Connector) messaging.Handler {
		return New(transport, messaging.HandlerFunc(func(_ context.Context, messages ...any) {
			for _, m := range messages {
				good.add(m.(order).N2ID())
			}
		}))
	})
	good.wait(t, 20*time.Second)
	parked := b.get(queue+".parked", 10*time.Second)
	_ = consumer.Close()
	if parked.MessageId != "garbage" || string(parked.Body) != `{not json` {
		t.Fatalf("parked %q with body %s", parked.MessageId, parked.Body)
	}
	reason, _ := parked.Headers["x-acemq-error"].(string)
	if len(reason) < 22 || reason[:22] != "could not be decoded: " {
		t.Fatalf("x-acemq-error = %q", reason)
	}
	if depth := b.depth(queue); depth != 0 {
		t.Fatalf("source queue holds %d messages", depth)
	}
}

func (o order) N2ID() string { return fmt.Sprintf("m-%05d", o.N) }

func TestBrokerRetryRepublishesWithTheAttemptAdvanced(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "retry")
	b := newBroker(t, url, queue)
	ids := b.publishOrders(queue, 50)

	var mu sync.Mutex
	attempts := map[string][]int{}
	second := newLedger(len(ids))
	consumer := run(t, url, queue, func(transport messaging.Connector) messaging.Handler {
		return New(transport, messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			for _, m := range messages {
				d := m.(messaging.Delivery)
				mu.Lock()
				attempts[d.MessageID] = append(attempts[d.MessageID], d.Attempt)
				mu.Unlock()
				if d.Attempt == 1 {
					if err := messaging.Retry(ctx, d, errors.New("not yet")); err != nil {
						panic(err)
					}
					continue
				}
				second.add(d.MessageID)
			}
		}), Options.FullDelivery(true),
			Options.Policy(retrypolicy.Fixed(3, 10*time.Millisecond)))
	})
	second.wait(t, 20*time.Second)
	_ = consumer.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if got := attempts[id]; len(got) < 2 || got[0] != 1 || got[len(got)-1] != 2 {
			t.Fatalf("%s was seen at attempts %v; want 1 then 2", id, got)
		}
	}
	if depth := b.depth(queue); depth != 0 {
		t.Fatalf("source queue holds %d messages", depth)
	}
}

func TestBrokerALongRetryWaitIsHeldByARetryRung(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "rung")
	b := newBroker(t, url, queue)
	rung := retrypolicy.RungName(queue, time.Second)
	t.Cleanup(func() { _, _ = b.ch.QueueDelete(rung, false, false, false) })
	ids := b.publishOrders(queue, 5)

	var mu sync.Mutex
	attempts := map[string][]int{}
	settled := &settlements{}
	second := newLedger(len(ids))
	consumer := run(t, url, queue, func(transport messaging.Connector) messaging.Handler {
		return New(transport, messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			for _, m := range messages {
				d := m.(messaging.Delivery)
				mu.Lock()
				attempts[d.MessageID] = append(attempts[d.MessageID], d.Attempt)
				mu.Unlock()
				if d.Attempt == 1 {
					if err := messaging.Retry(ctx, d, errors.New("not yet")); err != nil {
						panic(err)
					}
					continue
				}
				second.add(d.MessageID)
			}
		}), Options.FullDelivery(true), Options.Monitor(settled),
			Options.Policy(retrypolicy.Fixed(3, time.Second).WaitInBrokerFrom(time.Second)))
	})
	second.wait(t, 20*time.Second)
	_ = consumer.Close()
	mu.Lock()
	defer mu.Unlock()
	// A wait the rung could not hold is reported as rung_missing before it is
	// held in the process instead.
	if missing := settled.count(ActionRungMissing); missing > 0 {
		t.Fatalf("%d wait(s) could not use the rung and were held in the process; the rabbitmq connection should declare it (deadletter.Declarer)", missing)
	}
	if retried := settled.count(ActionRetried); retried != len(ids) {
		t.Fatalf("%d retries went through the rung, want %d", retried, len(ids))
	}
	for _, id := range ids {
		if got := attempts[id]; len(got) < 2 || got[0] != 1 || got[len(got)-1] != 2 {
			t.Fatalf("%s was seen at attempts %v; want 1 then 2 after the rung's TTL", id, got)
		}
	}
	if depth := b.depth(rung); depth != 0 {
		t.Fatalf("rung %s still holds %d messages", rung, depth)
	}
	if depth := b.depth(queue); depth != 0 {
		t.Fatalf("source queue holds %d messages", depth)
	}
}
