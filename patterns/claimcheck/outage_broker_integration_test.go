package claimcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// TestAStoreOutageDeadLettersNothing publishes 40 claim-checked messages and
// consumes them through a store whose Get answers "object store: 503 Slow
// Down" (a plain error, as S3 says it under load) to each key's first eight
// reads, more than the budget of five attempts, and then answers: every
// message is handled exactly once, none is dead-lettered or parked, and the
// outage spent no attempt.
func TestAStoreOutageDeadLettersNothing(t *testing.T) {
	url := testenv.Broker(t)
	queue, exchange := testenv.Name(t, "claimcheck-outage"), testenv.Name(t, "claimcheck-outage-x")
	const total, failures = 40, 8
	budget := retrypolicy.Fixed(5, 10*time.Millisecond)
	t.Cleanup(func() {
		testenv.DeleteTopology(url, []string{exchange}, append(rungNames(budget, queue), queue, queue+".dlq", queue+".parked")...)
	})
	store := NewMemoryStore()
	slow := &flakyStore{Store: store, fails: map[string]int{}, gets: map[string]int{}, first: failures}
	slow.err = func(string) error { return errors.New("object store: 503 Slow Down") }
	codec, _ := New(nil, slow, Options.OffloadAbove(0))

	quiet := slog.New(slog.DiscardHandler)
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	var mu sync.Mutex
	handled, attempts := map[string]int{}, map[string]int{}
	all, once := make(chan struct{}), sync.Once{}
	handler := messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		mu.Lock()
		defer mu.Unlock()
		for _, message := range messages {
			d := message.(messaging.Delivery)
			handled[d.MessageID]++
			attempts[d.MessageID] = d.Attempt
			if len(handled) == total {
				once.Do(func() { close(all) })
			}
		}
	})
	types := map[string]reflect.Type{"claimcheck.document": reflect.TypeOf(document{})}
	consumer := streaming.New(serialization.New(transport, serialization.Options.ReadTypes(types),
		serialization.Options.AddDeserializer(codec), serialization.Options.Logger(quiet)),
		streaming.Options.Logger(quiet),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.Topics(exchange),
			streaming.SubscriptionOptions.AddWorkers(handler, handler),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.RetryPolicy(budget))))
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()
	defer func() { _ = consumer.Close(); <-listening }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}

	publishing := serialization.New(transport, serialization.Options.Serializer(codec), serialization.Options.Logger(quiet),
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(document{}): "claimcheck.document"}))
	dispatches := make([]messaging.Dispatch, total)
	for i := range dispatches {
		id := fmt.Sprint("doc-", i)
		dispatches[i] = messaging.Dispatch{Topic: exchange, MessageID: id, Mandatory: true, Message: document{ID: id, Blob: "kept in the store"}}
	}
	write(t, ctx, publishing, dispatches)

	setAside := watch(t, url, queue+".dlq", queue+".parked")
	select {
	case <-all:
	case d := <-setAside:
		t.Fatalf("%s was set aside during the store's outage: %v", d.MessageId, d.Headers["x-acemq-error"])
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d messages handled within two minutes", len(handled), total)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range handled {
		if n != 1 || attempts[id] != 1 {
			t.Errorf("%s was handled %d times, at attempt %d; want once, at attempt 1 (an outage spends none)", id, n, attempts[id])
		}
	}
	t.Logf("%d messages handled once each through %d failed reads of the store", len(handled), total*failures)
}

// watch consumes queues until the test ends and hands on what arrives.
func watch(t *testing.T, url string, queues ...string) <-chan amqp.Delivery {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	arrived := make(chan amqp.Delivery, 1)
	for _, queue := range queues {
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
		if err != nil {
			t.Fatalf("watch %s: %v", queue, err)
		}
		go func() {
			for d := range deliveries {
				select {
				case arrived <- d:
				default:
				}
			}
		}()
	}
	return arrived
}
