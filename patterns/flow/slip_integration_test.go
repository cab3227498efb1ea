package flow

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/streaming"
	"github.com/warrenmq/messaging/topology"
)

// visit is one stop a message made.
type visit struct {
	stop, id, causation string
	form                Form
	total               int
}

// followThreeStops starts runs messages on a slip of three stops in form
// and follows them with FollowSlip at each stop: every run visits the three
// stops in order, once each, in the form it started in, with its
// correlation kept and its causation chained, and completes.
func followThreeStops(t *testing.T, transport messaging.Connector, name string, form Form, runs int) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stops := []string{"validate", "charge", "ship"}
	route := NewRoute(name, stops...)

	// The three addresses: a direct exchange named after the run, each
	// stop's queue bound on its step name (the declared route's topology,
	// which the JSON form addresses explicitly).
	plan := topology.Plan{Exchanges: []messaging.Exchange{{Name: name, Kind: messaging.ExchangeDirect, Durable: true}}}
	for _, stop := range stops {
		stepPlan, err := topology.ForStream(messaging.StreamConfig{StreamName: route.QueueFor(stop), EstablishTopology: true, DeadLetters: true,
			Bindings: []messaging.StreamBinding{{Exchange: name, Kind: messaging.ExchangeDirect, Key: stop}}})
		if err != nil {
			t.Fatal(err)
		}
		plan = plan.Merge(stepPlan)
	}
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	declarer, _ := messaging.As[messaging.Declarer](conn)
	if err := plan.Apply(ctx, declarer); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()

	var mu sync.Mutex
	visits := map[string][]visit{}
	completed := map[string]int{}
	done := make(chan struct{})
	monitor := &fakeMonitor{}
	observer := RunObserverFunc(func(_ context.Context, run RunFinished) {
		mu.Lock()
		defer mu.Unlock()
		completed[run.CorrelationID]++
		if len(completed) == runs {
			close(done)
		}
	})
	writer := batch.New(transport)
	defer writer.Close()
	var subscriptions []*streaming.Subscription
	for _, stop := range stops {
		step := FollowSlip(writer, func(ctx context.Context, d messaging.Delivery, o order) (order, error) {
			slip, _, _ := ReadSlip(d)
			mu.Lock()
			visits[d.CorrelationID] = append(visits[d.CorrelationID], visit{stop, d.MessageID, d.CausationID, slip.Form(), o.Total})
			mu.Unlock()
			o.Total++
			return o, nil
		}, Options.AlongRoute(route), Options.Monitor(monitor))
		subscriptions = append(subscriptions, streaming.NewSubscription(route.QueueFor(stop),
			streaming.SubscriptionOptions.AddWorkers(step),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.BatchCapacity(4)))
	}
	consumer := streaming.New(transport, streaming.Options.Subscriptions(subscriptions...), streaming.Options.Logger(quiet),
		streaming.Options.Context(WithRunObserver(context.Background(), observer)))
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()
	defer func() { _ = consumer.Close(); <-listening }()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}

	for i := range runs {
		var slip *Slip
		if form == FormSteps {
			slip = route.Start()
		} else {
			slip = NewRoutingSlip()
			for _, stop := range stops {
				slip.Then(name, stop, stop)
			}
		}
		id := fmt.Sprint("c-", i)
		if err := Start(ctx, writer, slip, messaging.Dispatch{MessageID: "m-" + id, CorrelationID: id, Payload: []byte(`{"id":"o","total":0}`)}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d runs completed", len(completed), runs)
	}
	_ = consumer.Close()
	<-listening

	mu.Lock()
	defer mu.Unlock()
	for i := range runs {
		id := fmt.Sprint("c-", i)
		seen := visits[id]
		if len(seen) != 3 || completed[id] != 1 {
			t.Fatalf("run %s made %d visits and completed %d times; want 3 and once: %+v", id, len(seen), completed[id], seen)
		}
		for n, v := range seen {
			if v.stop != stops[n] || v.form != form || v.total != n {
				t.Fatalf("run %s visit %d: %+v; want stop %s in the %s form carrying total %d", id, n, v, stops[n], form, n)
			}
		}
		if seen[0].id != "m-"+id || seen[1].causation != seen[0].id || seen[2].causation != seen[1].id {
			t.Fatalf("run %s: causation not chained: %+v", id, seen)
		}
	}
	if got := monitor.count("forwarded"); got != 2*runs {
		t.Fatalf("%d hops forwarded; want %d", got, 2*runs)
	}
	t.Logf("%d runs in the %s form visited 3 stops each and completed", runs, form)
}

func TestASlipOfThreeAddressesIsFollowedInEachFormOnMemory(t *testing.T) {
	for _, form := range []Form{FormJSON, FormSteps} {
		t.Run(form.String(), func(t *testing.T) {
			broker := memory.New()
			defer broker.Close()
			followThreeStops(t, broker, "orders", form, 100)
		})
	}
}

func TestASlipOfThreeAddressesIsFollowedInEachFormOnRabbitMQ(t *testing.T) {
	url := testenv.Broker(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, form := range []Form{FormJSON, FormSteps} {
		t.Run(form.String(), func(t *testing.T) {
			transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
			t.Cleanup(func() { _ = transport.Close() })
			name := testenv.Name(t, "slip")
			t.Cleanup(func() { deleteTopology(t, transport, name, "validate", "charge", "ship") })
			followThreeStops(t, transport, name, form, 100)
		})
	}
}
