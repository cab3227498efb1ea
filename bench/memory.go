package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/ordering"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// memoryBacklog is how many messages wait for the consumers the memory
// scenario holds back.
const memoryBacklog = 10000

// memoryTarget is what users asked of the example service with the backlog
// waiting: at most 64 MiB resident.
const memoryTarget = 64 << 20

// memoryScenario prints what the example service (cmd/orders) holds in
// memory at rest, with a backlog of order-placed messages while its handlers
// are held back, and while it drains them; then, in this process, the bytes
// a consumer holds per message in flight (ours beside the raw client), and
// what patterns/ordering keeps for keys seen once and then idle.
func memoryScenario(s settings) scenario {
	return scenario{name: "memory", once: func(ctx context.Context) error {
		if err := measureService(ctx, s); err != nil {
			return fmt.Errorf("the example service: %w", err)
		}
		if err := measureInFlight(ctx, s); err != nil {
			return fmt.Errorf("in flight: %w", err)
		}
		measureIdleKeys()
		return nil
	}}
}

// liveHeap is the heap the process's live objects take, after a full
// collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// perMessage is the growth from before to after, per message; negative when
// the heap shrank (noise larger than what was measured).
func perMessage(before, after uint64, messages int) float64 {
	if messages <= 0 {
		return 0
	}
	return (float64(after) - float64(before)) / float64(messages)
}

// mib formats bytes in MiB.
func mib(bytes float64) string { return fmt.Sprintf("%.1f MiB", bytes/(1<<20)) }

// measureInFlight holds messages in a consumer that does not finish its
// first one, at the subscription's default prefetch (256, with the rest of a
// backlog of memoryBacklog waiting in the broker) and with the whole backlog
// in flight (prefetch memoryBacklog), and prints the heap growth per message
// in flight for the raw client and for ours.
func measureInFlight(ctx context.Context, s settings) error {
	body, _ := json.Marshal(benchMessage{Data: strings.Repeat("x", max(0, s.size-12))})
	for _, prefetch := range []int{256, memoryBacklog} {
		var held [2]float64
		for i, hold := range []func(context.Context, settings, string, []byte, int) (float64, error){holdRaw, holdOurs} {
			queue := "warrenmq-bench-" + messaging.NewID()[:8]
			if err := declareQueue(s.url, queue); err != nil {
				return err
			}
			perMsg, err := hold(ctx, s, queue, body, prefetch)
			deleteQueue(s.url, queue)
			if err != nil {
				return err
			}
			held[i] = perMsg
		}
		ratio := 0.0
		if held[0] > 0 {
			ratio = held[1] / held[0]
		}
		fmt.Printf("# memory in flight, prefetch %d (%d B payloads, %d queued): raw %.0f B/msg, ours %.0f B/msg (ours/raw %.2f; ours beyond the payload %.0f B/msg)\n",
			prefetch, s.size, memoryBacklog, held[0], held[1], ratio, held[1]-float64(len(body)))
	}
	return nil
}

// holdRaw consumes with the raw client at prefetch, keeping every delivery
// unacknowledged, and returns the heap growth per delivery held.
func holdRaw(ctx context.Context, s settings, queue string, body []byte, prefetch int) (float64, error) {
	conn, err := amqp.Dial(s.url)
	if err != nil {
		return 0, fmt.Errorf("raw hold: dial: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, fmt.Errorf("raw hold: channel: %w", err)
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return 0, fmt.Errorf("raw hold: qos: %w", err)
	}
	deliveries, err := ch.ConsumeWithContext(ctx, queue, "bench-raw-hold", false, false, false, false, nil)
	if err != nil {
		return 0, fmt.Errorf("raw hold: %w", err)
	}
	before := liveHeap()
	held := make([]amqp.Delivery, 0, prefetch) // what a raw consumer keeps: the deliveries
	if err := preload(ctx, withMessages(s, memoryBacklog), queue, body); err != nil {
		return 0, err
	}
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	for len(held) < prefetch {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return 0, fmt.Errorf("raw hold: the channel closed")
			}
			held = append(held, d)
		case <-timer.C:
			return 0, fmt.Errorf("raw hold: %d of %d deliveries within a minute", len(held), prefetch)
		}
	}
	after := liveHeap()
	runtime.KeepAlive(held)
	return perMessage(before, after, len(held)), nil
}

// holdOurs consumes with our stack (streaming over serialization over the
// rabbitmq transport) at prefetch, with one worker whose handler waits until
// the heap was measured, and returns the heap growth per message in flight.
func holdOurs(ctx context.Context, s settings, queue string, body []byte, prefetch int) (float64, error) {
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url))
	defer transport.Close()
	decoded := serialization.New(transport,
		serialization.Options.ReadTypes(map[string]reflect.Type{"bench": reflect.TypeOf(benchMessage{})}))
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	defer open()
	var started atomic.Bool
	handler := messaging.HandlerFunc(func(context.Context, ...any) {
		started.Store(true)
		<-release
	})
	consumer := streaming.New(decoded, streaming.Options.Subscriptions(streaming.NewSubscription(queue,
		streaming.SubscriptionOptions.AddWorkers(handler),
		streaming.SubscriptionOptions.EstablishTopology(false),
		streaming.SubscriptionOptions.DeadLetters(false),
		streaming.SubscriptionOptions.BufferCapacity(uint16(min(prefetch, 65535))))))
	go consumer.Listen()
	defer func() { open(); _ = consumer.Close() }()
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := consumer.Started(startCtx); err != nil {
		return 0, fmt.Errorf("our consumer did not start: %w", err)
	}
	before := liveHeap()
	if err := preload(ctx, withMessages(s, memoryBacklog), queue, body); err != nil {
		return 0, err
	}
	if err := waitReady(ctx, s.url, queue, memoryBacklog-prefetch, time.Minute); err != nil {
		return 0, err
	}
	if !started.Load() {
		return 0, fmt.Errorf("our handler was not called although the broker delivered %d messages", prefetch)
	}
	after := liveHeap()
	return perMessage(before, after, prefetch), nil
}

// withMessages is s with messages messages per preload.
func withMessages(s settings, messages int) settings {
	s.messages = messages
	return s
}

// waitReady polls the queue until at most want messages are ready (the rest
// delivered to a consumer), then waits a little longer for the deliveries on
// the wire to reach the process.
func waitReady(ctx context.Context, url, queue string, want int, limit time.Duration) error {
	_, err := pollQueue(ctx, url, queue, limit, func(ready int) bool { return ready <= want })
	if err != nil {
		return fmt.Errorf("%w, wanted at most %d", err, want)
	}
	// The broker counts a message delivered when it sends it; give the last
	// ones time to arrive.
	return pause(ctx, 300*time.Millisecond)
}

// pollQueue reads the queue's ready count with a passive declare every 20 ms
// until done accepts it, and returns that count; it gives up after limit.
func pollQueue(ctx context.Context, url, queue string, limit time.Duration, done func(ready int) bool) (int, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return 0, fmt.Errorf("poll queue %s: %w", queue, err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, fmt.Errorf("poll queue %s: channel: %w", queue, err)
	}
	defer ch.Close()
	deadline := time.Now().Add(limit)
	for {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			return 0, fmt.Errorf("poll queue %s: %w", queue, err)
		}
		if done(q.Messages) {
			return q.Messages, nil
		}
		if time.Now().After(deadline) {
			return q.Messages, fmt.Errorf("queue %s still had %d ready messages after %s", queue, q.Messages, limit)
		}
		if err := pause(ctx, 20*time.Millisecond); err != nil {
			return q.Messages, err
		}
	}
}

// pause waits d, or less when ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// measureIdleKeys feeds patterns/ordering keys that each arrive once and go
// idle, one delivery per key in delivery order, and prints what the guard
// still holds afterwards.
func measureIdleKeys() {
	for _, keys := range []int{1000, 10000} {
		ids := make([]string, keys)
		for i := range ids {
			ids[i] = messaging.NewID()
		}
		byID := ordering.Key(func(_ any, d messaging.Delivery) string { return d.MessageID })
		guard := ordering.New(byID, messaging.HandlerFunc(func(context.Context, ...any) {}))
		ctx := context.Background()
		before := liveHeap()
		for i, id := range ids {
			delivery := []messaging.Delivery{{DeliveryID: uint64(i + 1), SourceQueue: "bench", MessageID: id}}
			guard.Handle(messaging.WithDeliveries(ctx, delivery), struct{}{})
		}
		after := liveHeap()
		runtime.KeepAlive(guard)
		runtime.KeepAlive(ids)
		fmt.Printf("# memory patterns/ordering, %d keys seen once, then idle: %.0f B held (%.1f B/key)\n",
			keys, float64(after)-float64(before), perMessage(before, after, keys))
	}
}
