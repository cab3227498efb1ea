package middleware

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/streaming"
)

// TestTheDocumentedChainOnRabbitMQ runs Logging, Recovery and Timeout in the
// documented order under the streaming runtime: of 60 messages, the "slow" ones
// outlive the timeout on their first attempt and are handled on the second;
// the "boom" ones panic and are dead-lettered with the panic's reason; the
// others are handled once. Every message is counted by id, and every line
// logged names its outcome.
func TestTheDocumentedChainOnRabbitMQ(t *testing.T) {
	url := testenv.Broker(t)
	queue, exchange := testenv.Name(t, "chain"), testenv.Name(t, "chain-x")
	t.Cleanup(func() { testenv.DeleteTopology(url, []string{exchange}, queue, queue+".dlq", queue+".parked") })
	const each = 20
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	var mu sync.Mutex
	done := map[string][]int{} // id -> attempts that finished
	var lines []string
	changed := make(chan struct{}, 1) // told after each line and each finished message
	tell := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	// The text handler writes each record in one Write.
	logger := slog.New(slog.NewTextHandler(writerFunc(func(line []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, string(line))
		tell()
		return len(line), nil
	}), nil))
	handle := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		for _, message := range messages {
			d := message.(messaging.Delivery)
			switch {
			case strings.HasPrefix(d.MessageID, "boom"):
				panic("cannot handle " + d.MessageID)
			case strings.HasPrefix(d.MessageID, "slow") && d.Attempt <= 1:
				<-ctx.Done() // cooperative: returns when the timeout cancels it
				continue
			}
			mu.Lock()
			done[d.MessageID] = append(done[d.MessageID], max(d.Attempt, 1))
			tell()
			mu.Unlock()
		}
	})
	worker := messaging.Chain(Logging(nil, Options.Logger(logger)), Recovery(), Timeout(300*time.Millisecond))(handle)

	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	consumer := streaming.New(transport, streaming.Options.Logger(quiet),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.Topics(exchange),
			streaming.SubscriptionOptions.AddWorkers(worker, worker, worker, worker),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.RetryPolicy(retrypolicy.Fixed(3, 10*time.Millisecond)),
		)))
	listening := make(chan struct{})
	go func() { consumer.Listen(); close(listening) }()
	defer func() {
		_ = consumer.Close()
		<-listening
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	writer, err := conn.Writer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	var dispatches []messaging.Dispatch
	for i := range each {
		for _, kind := range []string{"ok", "slow", "boom"} {
			dispatches = append(dispatches, messaging.Dispatch{Topic: exchange, MessageID: fmt.Sprint(kind, "-", i), MessageType: kind, Mandatory: true, Payload: []byte("{}")})
		}
	}
	if _, err := writer.Write(ctx, dispatches...); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	dead := drainDead(t, url, queue+".dlq", each)
	t.Logf("dead-lettered in %s", time.Since(began))
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for waiting := true; waiting; {
		mu.Lock()
		n, logged := len(done), len(lines)
		mu.Unlock()
		// A retried copy can be handled before the line of its first attempt
		// is written (the republish happens inside the settlement): wait for
		// both.
		if n >= 2*each && logged >= 4*each {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			waiting = false
		}
	}
	t.Logf("handled in %s", time.Since(began))
	mu.Lock()
	defer mu.Unlock()
	for i := range each {
		if got := done[fmt.Sprint("ok-", i)]; len(got) != 1 || got[0] != 1 {
			t.Errorf("ok-%d finished on attempts %v; want [1]", i, got)
		}
		if got := done[fmt.Sprint("slow-", i)]; len(got) != 1 || got[0] != 2 {
			t.Errorf("slow-%d finished on attempts %v; want [2]", i, got)
		}
		id := fmt.Sprint("boom-", i)
		if want := "the handler panicked on message " + id + ": cannot handle " + id; !strings.Contains(dead[id], want) {
			t.Errorf("%s dead-lettered with %q; want it to say %q", id, dead[id], want)
		}
	}
	outcomes := map[string]int{}
	for _, line := range lines {
		if m := handledLine.FindStringSubmatch(line); m != nil && m[1] == queue {
			outcomes[m[2]+" "+m[3]]++
		}
	}
	t.Logf("logged outcomes: %v", outcomes)
	for line, want := range map[string]int{
		"ok accepted":   each,
		"slow retried":  each,
		"slow accepted": each,
		"boom rejected": each,
	} {
		if outcomes[line] != want {
			t.Errorf("%d lines %q; want %d", outcomes[line], line, want)
		}
	}
}

// handledLine is Logging's line in the text handler's form: the queue, the
// message type and the outcome.
var handledLine = regexp.MustCompile(`level=INFO msg="Delivery handled" queue=(\S+) message_id=\S+ message_type=(\S+) attempt=\d+ took=\S+ outcome=(\S+)`)

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// drainDead consumes want messages from queue and returns their reasons by id.
func drainDead(t *testing.T, url, queue string, want int) map[string]string {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for got := 0; got < want; {
		var d amqp.Delivery
		select {
		case d = <-deliveries:
		case <-deadline.C:
			t.Fatalf("%d of %d messages reached %s within a minute", got, want, queue)
		}
		if _, twice := reasons[d.MessageId]; twice {
			t.Errorf("%s dead-lettered twice", d.MessageId)
		}
		reasons[d.MessageId] = fmt.Sprint(d.Headers[wire.HeaderError])
		got++
	}
	return reasons
}
