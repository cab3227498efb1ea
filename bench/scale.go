package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

// quiet is the outbox instances' logger: a relay that falls behind says so
// (its channel is full, commits stay in the table), which is the point of
// these runs, not news.
var quiet = slog.New(slog.DiscardHandler)

// scaleMessages is how many messages one point of the scale scenario moves.
const scaleMessages = 20000

// scaleScenario measures how cost grows with the work a service is given:
// one consumer with 1, 10 and 100 subscriptions (each beside the raw client
// consuming as many queues on one connection, a channel each), and the
// outbox with 1 and 8 relays on one table, draining a backlog and relaying
// live commits.
func scaleScenario(s settings) scenario {
	body, _ := json.Marshal(benchMessage{Data: strings.Repeat("x", max(0, s.size-12))})
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	tables := outboxTables{outbox: "bench_scale_" + suffix, plain: "bench_scale_plain_" + suffix, strong: "bench_scale_strong_" + suffix}
	table := tables.outbox
	var db *sql.DB
	footprints := map[int]subscriptionFootprint{}
	var sides []side
	for _, n := range []int{1, 10, 100} {
		raw, ours := fmt.Sprintf("raw-%d", n), fmt.Sprintf("subscriptions-%d", n)
		sides = append(sides,
			side{name: raw, run: func(ctx context.Context, queue string) (measurement, error) {
				return scaleRaw(ctx, s, queue, body, n)
			}},
			side{name: ours, baseline: raw, run: func(ctx context.Context, queue string) (measurement, error) {
				m, footprint, err := scaleOurs(ctx, s, queue, body, n)
				footprints[n] = footprint
				return m, err
			}})
	}
	for _, relays := range []int{1, 8} {
		sides = append(sides,
			side{name: fmt.Sprintf("backlog-relays-%d", relays), baseline: "backlog-relays-1", run: func(ctx context.Context, queue string) (measurement, error) {
				return relayBacklog(ctx, s, db, table, queue, body, relays)
			}},
			side{name: fmt.Sprintf("live-relays-%d", relays), baseline: "live-relays-1", run: func(ctx context.Context, queue string) (measurement, error) {
				return relayLive(ctx, s, db, table, queue, body, relays)
			}})
	}
	return scenario{name: "scale", sides: sides, setup: tables.setup(s.dsn, &db), report: func(totals []measurement) {
		// The sides come in pairs, raw-N then subscriptions-N, for 1, 10 and 100.
		one := totals[1].rate()
		for i, n := range []int{1, 10, 100} {
			f := footprints[n]
			fmt.Printf("# scale subscriptions-%d: %.2f of subscriptions-1's rate; started in %s; %.0f KiB heap and %.1f goroutines per subscription\n",
				n, totals[2*i+1].rate()/max(one, 1), f.startup.Round(time.Millisecond), f.heapPer/1024, f.goroutinesPer)
		}
	}}
}

// subscriptionFootprint is what one consumer's subscriptions cost at rest.
type subscriptionFootprint struct {
	startup       time.Duration
	heapPer       float64
	goroutinesPer float64
}

// scaleQueues declares n queues named after queue and returns their names
// and how to delete them.
func scaleQueues(s settings, queue string, n int) ([]string, func(), error) {
	queues := make([]string, n)
	for i := range queues {
		queues[i] = fmt.Sprintf("%s.%d", queue, i)
	}
	remove := func() {
		_ = withChannel(s.url, func(ch *amqp.Channel) error {
			for _, q := range queues {
				_, _ = ch.QueueDelete(q, false, false, false)
			}
			return nil
		})
	}
	err := withChannel(s.url, func(ch *amqp.Channel) error {
		for _, q := range queues {
			if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		remove()
		return nil, nil, fmt.Errorf("declare %d queues: %w", n, err)
	}
	return queues, remove, nil
}

// preloadSpread publishes total JSON messages of type "bench" round robin
// over queues, with the raw client, at most s.window unconfirmed (not timed).
func preloadSpread(ctx context.Context, s settings, queues []string, total int, body []byte) error {
	conn, err := amqp.Dial(s.url)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		return err
	}
	pending := make([]*amqp.DeferredConfirmation, 0, s.window)
	for i := range total {
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queues[i%len(queues)], false, false, amqp.Publishing{
			DeliveryMode: amqp.Persistent, ContentType: "application/json", Type: "bench", MessageId: fmt.Sprintf("m-%d", i), Body: body,
		})
		if err != nil {
			return err
		}
		if pending = append(pending, c); len(pending) == s.window || i == total-1 {
			for _, p := range pending {
				if err := waitConfirm(ctx, p); err != nil {
					return err
				}
			}
			pending = pending[:0]
		}
	}
	return nil
}

// scaleRaw drains scaleMessages spread over n queues with the raw client: one
// connection, a channel and a consumer per queue, prefetch 256 (the
// subscriptions' default), a multiple-ack every 128.
func scaleRaw(ctx context.Context, s settings, queue string, body []byte, n int) (measurement, error) {
	queues, remove, err := scaleQueues(s, queue, n)
	if err != nil {
		return measurement{}, err
	}
	defer remove()
	if err := preloadSpread(ctx, s, queues, scaleMessages, body); err != nil {
		return measurement{}, err
	}
	conn, err := amqp.Dial(s.url)
	if err != nil {
		return measurement{}, fmt.Errorf("raw scale: dial: %w", err)
	}
	defer conn.Close()
	var consumed atomic.Int64
	done := make(chan struct{})
	var finish sync.Once
	watch := startWatch()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, q := range queues {
		want := scaleMessages / n
		if i < scaleMessages%n {
			want++
		}
		wg.Go(func() {
			if err := rawDrain(ctx, conn, q, want, done, &consumed); err != nil {
				errs <- err
			}
			if consumed.Load() >= scaleMessages {
				finish.Do(func() { close(done) })
			}
		})
	}
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-done:
	case err := <-errs:
		finish.Do(func() { close(done) })
		wg.Wait()
		return watch.stop(int(consumed.Load())), err
	case <-timer.C:
		finish.Do(func() { close(done) })
	}
	m := watch.stop(int(consumed.Load()))
	wg.Wait()
	if m.msgs < scaleMessages {
		return m, fmt.Errorf("raw scale: consumed %d of %d within a minute", m.msgs, scaleMessages)
	}
	return m, nil
}

// rawDrain consumes want messages from queue on a channel of its own.
func rawDrain(ctx context.Context, conn *amqp.Connection, queue string, want int, done <-chan struct{}, consumed *atomic.Int64) error {
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("raw scale: channel: %w", err)
	}
	defer ch.Close()
	if err := ch.Qos(256, 0, false); err != nil {
		return fmt.Errorf("raw scale: qos: %w", err)
	}
	deliveries, err := ch.ConsumeWithContext(ctx, queue, "", false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("raw scale: consume %s: %w", queue, err)
	}
	for got := 0; got < want; {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return fmt.Errorf("raw scale: the channel of %s closed", queue)
			}
			got++
			if got%128 == 0 || got == want {
				if err := d.Ack(true); err != nil {
					return err
				}
			}
			consumed.Add(1)
		case <-done:
			return nil
		}
	}
	return nil
}

// scaleOurs drains scaleMessages spread over n queues with one consumer of
// n subscriptions (the defaults: prefetch 256, batches of 1, one worker
// each, decoding JSON under retry), timed from Listen like the raw side from
// its first channel; beforehand, the same consumer on the empty queues says
// what the subscriptions cost at rest.
func scaleOurs(ctx context.Context, s settings, queue string, body []byte, n int) (measurement, subscriptionFootprint, error) {
	queues, remove, err := scaleQueues(s, queue, n)
	if err != nil {
		return measurement{}, subscriptionFootprint{}, err
	}
	defer remove()
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url))
	defer transport.Close()
	footprint, err := restingFootprint(ctx, transport, queues)
	if err != nil {
		return measurement{}, footprint, err
	}
	if err := preloadSpread(ctx, s, queues, scaleMessages, body); err != nil {
		return measurement{}, footprint, err
	}
	var handled atomic.Int64
	done := make(chan struct{})
	var finish sync.Once
	watch := startWatch()
	stop, err := startSubscriptions(ctx, transport, queues, func(count int) {
		if handled.Add(int64(count)) >= scaleMessages {
			finish.Do(func() { close(done) })
		}
	})
	if err != nil {
		return measurement{}, footprint, err
	}
	defer stop()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
	m := watch.stop(int(handled.Load()))
	if m.msgs < scaleMessages {
		return m, footprint, fmt.Errorf("%d subscriptions handled %d of %d within a minute", n, m.msgs, scaleMessages)
	}
	return m, footprint, nil
}

// restingFootprint starts a consumer of one subscription per queue (empty
// queues), and reports how long it took to start and the heap and
// goroutines each subscription added.
func restingFootprint(ctx context.Context, transport messaging.Connector, queues []string) (subscriptionFootprint, error) {
	heapBefore, goroutinesBefore := liveHeap(), runtime.NumGoroutine()
	began := time.Now()
	stop, err := startSubscriptions(ctx, transport, queues, func(int) {})
	if err != nil {
		return subscriptionFootprint{}, err
	}
	footprint := subscriptionFootprint{
		startup:       time.Since(began),
		heapPer:       perMessage(heapBefore, liveHeap(), len(queues)),
		goroutinesPer: float64(runtime.NumGoroutine()-goroutinesBefore) / float64(len(queues)),
	}
	stop()
	return footprint, nil
}

// startSubscriptions starts one consumer with a subscription per queue (the
// subscription defaults, one worker each, JSON decoded under retry), waits
// until every subscription consumes, and returns how to close it; handled
// hears the size of every batch handled.
func startSubscriptions(ctx context.Context, transport messaging.Connector, queues []string, handled func(int)) (func(), error) {
	decoded := serialization.New(transport,
		serialization.Options.ReadTypes(map[string]reflect.Type{"bench": reflect.TypeOf(benchMessage{})}))
	handler := retry.New(messaging.HandlerFunc(func(_ context.Context, messages ...any) { handled(len(messages)) }))
	subscriptions := make([]*streaming.Subscription, len(queues))
	for i, q := range queues {
		subscriptions[i] = streaming.NewSubscription(q,
			streaming.SubscriptionOptions.AddWorkers(handler),
			streaming.SubscriptionOptions.EstablishTopology(false),
			streaming.SubscriptionOptions.DeadLetters(false))
	}
	consumer := streaming.New(decoded, streaming.Options.Subscriptions(subscriptions...))
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()
	stop := func() { stopListener(consumer, listening, "consumer") }
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := consumer.Started(startCtx); err != nil {
		stop()
		return nil, fmt.Errorf("%d subscriptions did not start: %w", len(queues), err)
	}
	return stop, nil
}

// relayBacklog commits scaleMessages to the outbox table with no relay
// running (100 per transaction), then times relays instances on the table,
// started together, until the broker holds them all.
func relayBacklog(ctx context.Context, s settings, db *sql.DB, table, queue string, body []byte, relays int) (measurement, error) {
	if err := truncate(ctx, db, table); err != nil {
		return measurement{}, err
	}
	if err := storeBacklog(ctx, s, db, table, queue, body); err != nil {
		return measurement{}, err
	}
	watch := startWatch()
	stop := startRelays(s, db, table, relays)
	defer stop()
	if _, err := waitDepth(ctx, s.url, queue, scaleMessages, outboxDrainLimit); err != nil {
		return watch.stop(0), fmt.Errorf("%d relays: %w", relays, err)
	}
	return watch.stop(scaleMessages), nil
}

// storeBacklog commits scaleMessages rows through an outbox instance whose
// relay never runs; its leases end at once, so any relay may take the rows.
func storeBacklog(ctx context.Context, s settings, db *sql.DB, table, queue string, body []byte) error {
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url))
	defer transport.Close()
	outbox, dispatcher := sqlmq.New(transport, sqlmq.Options.StorageHandle(db), sqlmq.Options.Table(table),
		sqlmq.Options.LeaseTimeout(time.Millisecond), sqlmq.Options.Logger(quiet))
	defer func() { _ = dispatcher.Close() }()
	connection, err := outbox.Connect(ctx)
	if err != nil {
		return fmt.Errorf("outbox: connect: %w", err)
	}
	defer connection.Close()
	dispatches := make([]messaging.Dispatch, 100)
	for i := range dispatches {
		dispatches[i] = messaging.Dispatch{RoutingKey: queue, Mandatory: true, ContentType: "application/octet-stream", Payload: body}
	}
	for range scaleMessages / len(dispatches) {
		if err := commitOnce(ctx, connection, dispatches); err != nil {
			return err
		}
	}
	return nil
}

// startRelays starts n outbox instances on table, each with its own
// transport, and returns how to stop them all.
func startRelays(s settings, db *sql.DB, table string, n int) func() {
	type relay struct {
		transport  messaging.Connector
		dispatcher messaging.ListenCloser
		listening  chan struct{}
	}
	relays := make([]relay, n)
	for i := range relays {
		transport := rabbitmq.New(rabbitmq.Options.Address(s.url), rabbitmq.Options.MaxOutstandingPublishes(s.window))
		_, dispatcher := sqlmq.New(transport, sqlmq.Options.StorageHandle(db), sqlmq.Options.Table(table),
			sqlmq.Options.ShutdownTimeout(10*time.Second), sqlmq.Options.Logger(quiet))
		relays[i] = relay{transport: transport, dispatcher: dispatcher, listening: make(chan struct{})}
	}
	for _, r := range relays {
		go func() { defer close(r.listening); r.dispatcher.Listen() }()
	}
	return func() {
		for _, r := range relays {
			stopListener(r.dispatcher, r.listening, "outbox relay")
			_ = r.transport.Close()
		}
	}
}

// relayLive runs relays outbox instances on one table, each committing 100
// messages per transaction for the run's duration and relaying its own
// commits, as that many copies of a service would, and times them until the
// broker holds every committed message.
func relayLive(ctx context.Context, s settings, db *sql.DB, table, queue string, body []byte, relays int) (measurement, error) {
	if err := truncate(ctx, db, table); err != nil {
		return measurement{}, err
	}
	dispatches := make([]messaging.Dispatch, 100)
	for i := range dispatches {
		dispatches[i] = messaging.Dispatch{RoutingKey: queue, Mandatory: true, ContentType: "application/octet-stream", Payload: body}
	}
	connections := make([]messaging.Connection, relays)
	for i := range connections {
		transport := rabbitmq.New(rabbitmq.Options.Address(s.url), rabbitmq.Options.MaxOutstandingPublishes(s.window))
		defer transport.Close()
		outbox, dispatcher := sqlmq.New(transport, sqlmq.Options.StorageHandle(db), sqlmq.Options.Table(table),
			sqlmq.Options.ShutdownTimeout(10*time.Second), sqlmq.Options.Logger(quiet))
		listening := make(chan struct{})
		go func() { defer close(listening); dispatcher.Listen() }()
		defer stopListener(dispatcher, listening, "outbox relay")
		connection, err := outbox.Connect(ctx)
		if err != nil {
			return measurement{}, fmt.Errorf("outbox: connect: %w", err)
		}
		defer connection.Close()
		connections[i] = connection
	}
	var committed atomic.Int64
	errs := make(chan error, relays)
	var wg sync.WaitGroup
	watch := startWatch()
	deadline := watch.start.Add(s.duration)
	for _, connection := range connections {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := commitOnce(ctx, connection, dispatches); err != nil {
					errs <- err
					return
				}
				committed.Add(int64(len(dispatches)))
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return watch.stop(int(committed.Load())), err
	}
	total := int(committed.Load())
	if _, err := waitDepth(ctx, s.url, queue, total, outboxDrainLimit); err != nil {
		return watch.stop(0), fmt.Errorf("%d relays: %w", relays, err)
	}
	return watch.stop(total), nil
}
