package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

const (
	// roundTripLimit bounds the wait for one message to come back.
	roundTripLimit = 10 * time.Second
	// warmUpLimit bounds the first, untimed round trip, which includes the
	// consumer's connecting and subscribing.
	warmUpLimit = 30 * time.Second
)

// roundTripScenario: publish one message and wait until the consumer has it,
// sequentially, -roundtrips times: the latency of the whole path.
func roundTripScenario(s settings) scenario {
	body, _ := json.Marshal(benchMessage{Data: strings.Repeat("x", max(0, s.size-12))})
	return scenario{
		name:   "roundtrip",
		allocs: true,
		sides: []side{
			{name: "raw", run: func(ctx context.Context, queue string) (measurement, error) {
				return rawRoundTrip(ctx, s, queue, body)
			}},
			{name: "ours", baseline: "raw", run: func(ctx context.Context, queue string) (measurement, error) {
				return oursRoundTrip(ctx, s, queue, body)
			}},
		},
		report: func(totals []measurement) {
			raw, ours := totals[0].latencies, totals[1].latencies
			rawP50, oursP50 := percentile(raw, 0.50), percentile(ours, 0.50)
			rawP99, oursP99 := percentile(raw, 0.99), percentile(ours, 0.99)
			fmt.Printf("# roundtrip p50 raw %s ours %s ratio %.2f; p99 raw %s ours %s ratio %.2f\n",
				rawP50.Round(time.Microsecond), oursP50.Round(time.Microsecond), durationRatio(oursP50, rawP50),
				rawP99.Round(time.Microsecond), oursP99.Round(time.Microsecond), durationRatio(oursP99, rawP99))
			printHandoffs("roundtrip", 4, "the confirm passes the publisher's confirm reader; the delivery the runtime's reader, its worker, and the handler's signal to the caller, where raw's caller takes it from the client's channel")
		},
	}
}

// percentile returns the p-quantile (nearest rank) of the latencies.
func percentile(latencies []time.Duration, p float64) time.Duration {
	if len(latencies) == 0 {
		return 0
	}
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

func durationRatio(ours, raw time.Duration) float64 {
	if raw <= 0 {
		return 0
	}
	return float64(ours) / float64(raw)
}

// timeRoundTrips runs one untimed round trip, then s.roundtrips timed ones.
func timeRoundTrips(s settings, one func(limit time.Duration) error) (measurement, error) {
	if err := one(warmUpLimit); err != nil {
		return measurement{}, fmt.Errorf("warm-up: %w", err)
	}
	latencies := make([]time.Duration, 0, s.roundtrips)
	watch := startWatch()
	for range s.roundtrips {
		start := time.Now()
		if err := one(roundTripLimit); err != nil {
			return watch.stop(len(latencies)), err
		}
		latencies = append(latencies, time.Since(start))
	}
	m := watch.stop(len(latencies))
	m.latencies = latencies
	return m, nil
}

// rawRoundTrip: a confirm-mode channel publishes, a consumer on another channel
// of the same connection receives; each round trip waits for the delivery and
// the confirm.
func rawRoundTrip(ctx context.Context, s settings, queue string, body []byte) (measurement, error) {
	conn, err := amqp.Dial(s.url)
	if err != nil {
		return measurement{}, fmt.Errorf("raw round trip: cannot reach RabbitMQ: %w; `make services` starts it", err)
	}
	defer conn.Close()
	publisher, err := conn.Channel()
	if err != nil {
		return measurement{}, fmt.Errorf("raw round trip: channel: %w", err)
	}
	if err := publisher.Confirm(false); err != nil {
		return measurement{}, fmt.Errorf("raw round trip: confirm mode: %w", err)
	}
	consumer, err := conn.Channel()
	if err != nil {
		return measurement{}, fmt.Errorf("raw round trip: channel: %w", err)
	}
	if err := consumer.Qos(s.window, 0, false); err != nil {
		return measurement{}, fmt.Errorf("raw round trip: qos: %w", err)
	}
	deliveries, err := consumer.ConsumeWithContext(ctx, queue, "bench-roundtrip", false, false, false, false, nil)
	if err != nil {
		return measurement{}, fmt.Errorf("raw round trip: consume: %w", err)
	}
	sequence := 0
	return timeRoundTrips(s, func(limit time.Duration) error {
		sequence++
		confirm, err := publisher.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
			DeliveryMode: amqp.Persistent, ContentType: "application/json", Type: "bench",
			MessageId: fmt.Sprintf("r-%d", sequence), Body: body,
		})
		if err != nil {
			return fmt.Errorf("raw round trip: publish: %w", err)
		}
		timer := time.NewTimer(limit)
		defer timer.Stop()
		var delivery amqp.Delivery
		select {
		case d, ok := <-deliveries:
			if !ok {
				return fmt.Errorf("raw round trip: the broker closed the consumer")
			}
			delivery = d
		case <-timer.C:
			return fmt.Errorf("raw round trip: no delivery within %s (another consumer on the queue?)", limit)
		}
		if err := waitConfirm(ctx, confirm); err != nil {
			return fmt.Errorf("raw round trip: %w", err)
		}
		return delivery.Ack(false)
	})
}

// oursRoundTrip: batch.Writer publishes one dispatch per call (confirmed),
// streaming + serialization + retry consume it, and the handler signals.
func oursRoundTrip(ctx context.Context, s settings, queue string, body []byte) (measurement, error) {
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url))
	defer transport.Close()
	writer := batch.New(transport)
	defer writer.Close()
	decoded := serialization.New(transport,
		serialization.Options.ReadTypes(map[string]reflect.Type{"bench": reflect.TypeOf(benchMessage{})}))
	received := make(chan struct{}, s.roundtrips+16) // never blocks the handler
	handler := retry.New(messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		for _, m := range messages {
			if _, ok := m.(benchMessage); !ok {
				panic(fmt.Sprintf("bench: unexpected message %T", m))
			}
			select {
			case received <- struct{}{}:
			default:
			}
		}
	}))
	consumer := streaming.New(decoded, streaming.Options.Subscriptions(streaming.NewSubscription(queue,
		streaming.SubscriptionOptions.AddWorkers(handler),
		streaming.SubscriptionOptions.EstablishTopology(false),
		streaming.SubscriptionOptions.DeadLetters(false),
		streaming.SubscriptionOptions.BufferCapacity(uint16(min(s.window, 65535))))))
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		consumer.Listen()
	}()
	defer stopListener(consumer, listening, "consumer")
	dispatch := messaging.Dispatch{RoutingKey: queue, Mandatory: true, MessageType: "bench", ContentType: "application/json", Payload: body}
	return timeRoundTrips(s, func(limit time.Duration) error {
		if _, err := writer.Write(ctx, dispatch); err != nil {
			return fmt.Errorf("round trip: publish: %w", err)
		}
		timer := time.NewTimer(limit)
		defer timer.Stop()
		select {
		case <-received:
			return nil
		case <-timer.C:
			return fmt.Errorf("round trip: the handler got nothing within %s (see the consumer's WARN lines)", limit)
		}
	})
}
