package streams

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// BenchmarkStreamConsume reads one stream of 20,000 messages from first with
// a prefetch of 500, in each round through the raw client (amqp091-go, one
// acknowledgement per message, as the runtime's batch of one does) and then
// through Read (its start and close included), and reports both rates and
// their ratio (target: at least 0.9).
//
//	go test -run '^$' -bench StreamConsume -benchtime 5x ./patterns/streams/
func BenchmarkStreamConsume(b *testing.B) {
	url := testenv.Broker(b)
	const total, prefetch = 20_000, 500
	name := testenv.Name(b, "bench")
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	defer testenv.DeleteTopology(url, nil, name, name+".dlq", name+".parked")
	ctx := context.Background()
	conn, err := transport.Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := Declare(ctx, conn, name, Retention{MaxAge: time.Hour}); err != nil {
		b.Fatal(err)
	}
	_ = conn.Close()
	publish(b, transport, name, ids("bench", 0, total)...)

	var raw, library time.Duration
	for b.Loop() {
		began := time.Now()
		readRaw(b, url, name, total, prefetch)
		raw += time.Since(began)
		began = time.Now()
		readStreams(b, transport, name, total, prefetch)
		library += time.Since(began)
	}
	rawRate := float64(total*b.N) / raw.Seconds()
	libraryRate := float64(total*b.N) / library.Seconds()
	b.ReportMetric(rawRate, "raw-msg/s")
	b.ReportMetric(libraryRate, "streams-msg/s")
	b.ReportMetric(libraryRate/rawRate, "ratio")
}

// readStreams reads the whole stream through Read, start and close included.
func readStreams(b *testing.B, transport messaging.Connector, stream string, total, prefetch int) {
	var handled atomic.Int64
	done := make(chan struct{})
	h := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		if handled.Add(int64(len(messages))) == int64(total) {
			close(done)
		}
	})
	r, err := Read(context.Background(), transport, stream, h, Options.From(FromFirst()), Options.Prefetch(prefetch), Options.Logger(quiet))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d handled", handled.Load(), total)
	}
}

func readRaw(b *testing.B, url, stream string, total, prefetch int) {
	conn, err := amqp.Dial(url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		b.Fatal(err)
	}
	deliveries, err := ch.Consume(stream, "", false, false, false, false, amqp.Table{OffsetArgument: "first"})
	if err != nil {
		b.Fatal(err)
	}
	timeout := time.After(time.Minute)
	for range total {
		select {
		case d := <-deliveries:
			if err := d.Ack(false); err != nil {
				b.Fatal(err)
			}
		case <-timeout:
			b.Fatal("the raw reader stalled")
		}
	}
}
