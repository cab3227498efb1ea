package request

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/streaming"
)

// brokerPair starts Serve on a fresh queue and a requester for it on the
// local RabbitMQ, and removes the queues when the test ends.
func brokerPair(t *testing.T, url string, fn Func[priceRequest, priceResponse], requesterOptions ...Option) (*Requester[priceRequest, priceResponse], *Server[priceRequest, priceResponse], string) {
	t.Helper()
	queue := testenv.Name(t, "prices")
	t.Cleanup(func() { testenv.DeleteTopology(url, nil, queue, queue+".dlq", queue+".parked") })
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	server, err := Serve(ctx, transport, queue, fn, Options.Workers(4), Options.Logger(quiet),
		Options.Subscription(streaming.SubscriptionOptions.ReconnectDelay(50*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	requester, err := NewRequester[priceRequest, priceResponse](ctx, transport, "", queue, append([]Option{Options.Logger(quiet)}, requesterOptions...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = requester.Close() })
	return requester, server, queue
}

func withChannel(url string, f func(*amqp.Channel) error) error {
	conn, err := amqp.Dial(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	return f(ch)
}

// TestBrokerTwentyConcurrentCallersEachGetTheirOwnAnswer: 20 callers, 25
// requests each, on RabbitMQ; every answer is counted by its SKU.
func TestBrokerTwentyConcurrentCallersEachGetTheirOwnAnswer(t *testing.T) {
	url := testenv.Broker(t)
	requester, server, _ := brokerPair(t, url, price)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const callers, each = 20, 25
	started := time.Now()
	defer func() { t.Logf("%d requests in %s", callers*each, time.Since(started).Round(time.Millisecond)) }()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers = map[string]int{}
		wrong   []string
	)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				sku := fmt.Sprintf("caller-%d-%d", c, i)
				response, err := requester.Do(ctx, priceRequest{SKU: sku})
				mu.Lock()
				if err != nil || response.SKU != sku || response.Cents != 100+len(sku) {
					wrong = append(wrong, fmt.Sprintf("%s: got %+v, %v", sku, response, err))
				} else {
					answers[sku]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, w := range wrong {
		t.Error(w)
	}
	if len(answers) != callers*each {
		t.Errorf("%d distinct requests answered; want %d", len(answers), callers*each)
	}
	if got := server.Answered(); got != callers*each {
		t.Errorf("Answered() = %d; want %d", got, callers*each)
	}
}

// TestBrokerErrorReplyArrivesAtOnceAndTimeoutIsItsOwnError: with the default
// 30 s timeout, an error reply reaches the caller as the specified error text within
// milliseconds; a responder that does not answer within the requester's
// timeout gives ErrRequestTimedOut.
func TestBrokerErrorReplyArrivesAtOnceAndTimeoutIsItsOwnError(t *testing.T) {
	url := testenv.Broker(t)
	release := make(chan struct{})
	defer close(release)
	slow := func(ctx context.Context, d messaging.Delivery, request priceRequest) (priceResponse, error) {
		if request.SKU == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return price(ctx, d, request)
	}
	requester, _, queue := brokerPair(t, url, slow)
	ctx := context.Background()

	started := time.Now()
	_, err := requester.Do(ctx, priceRequest{SKU: "missing"})
	elapsed := time.Since(started)
	if err == nil || err.Error() != "acemq: the responder failed: no such product" {
		t.Fatalf("got %v; want acemq: the responder failed: no such product", err)
	}
	if elapsed > time.Second {
		t.Errorf("the error reply took %s; want milliseconds, not the 30 s timeout", elapsed)
	}
	t.Logf("error reply after %s", elapsed.Round(time.Microsecond))
	dead := waitForMessages(t, url, queue+".dlq", 1)
	if dead != 1 {
		t.Errorf("%d requests in %s.dlq after the error reply; want 1", dead, queue)
	}

	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	impatient, err := NewRequester[priceRequest, priceResponse](ctx, transport, "", queue,
		Options.Timeout(300*time.Millisecond), Options.Logger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	started = time.Now()
	_, err = impatient.Do(ctx, priceRequest{SKU: "slow"})
	elapsed = time.Since(started)
	if !errors.Is(err, ErrRequestTimedOut) {
		t.Fatalf("got %v; want ErrRequestTimedOut", err)
	}
	if elapsed < 300*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("timed out after %s; want about 300ms", elapsed)
	}
}

// waitForMessages waits up to 10 s for queue to hold want messages and
// returns how many it holds.
func waitForMessages(t *testing.T, url, queue string, want int) int {
	t.Helper()
	var n int
	var err error
	testenv.Poll(10*time.Second, func() bool {
		err = withChannel(url, func(ch *amqp.Channel) error {
			q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
			n = q.Messages
			return err
		})
		return err != nil || n >= want
	})
	if err != nil {
		t.Fatalf("inspect %s: %v", queue, err)
	}
	return n
}

// TestBrokerWriteBothReadEither: a request published by hand with only the
// acemq-reply-to header, and one with only the reply-to property, are both
// answered, with the request's correlation and its id as causation; and a
// request the requester sends carries both, to the same queue.
func TestBrokerWriteBothReadEither(t *testing.T) {
	url := testenv.Broker(t)
	_, _, queue := brokerPair(t, url, price)
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	replies, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(replies.Name, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	requests := map[string]amqp.Publishing{
		"header-only":   {MessageId: "by-hand-header", CorrelationId: "corr-header", Headers: amqp.Table{HeaderReplyTo: replies.Name}, Body: []byte(`{"sku":"header"}`)},
		"property-only": {MessageId: "by-hand-property", CorrelationId: "corr-property", ReplyTo: replies.Name, Body: []byte(`{"sku":"property"}`)},
	}
	for name, p := range requests {
		if err := ch.PublishWithContext(ctx, "", queue, true, false, p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	got := map[string]amqp.Delivery{}
	for len(got) < len(requests) {
		select {
		case d := <-deliveries:
			got[d.CorrelationId] = d
		case <-ctx.Done():
			t.Fatalf("%d of %d hand-built requests answered", len(got), len(requests))
		}
	}
	for _, c := range []struct{ correlation, id, body string }{
		{"corr-header", "by-hand-header", `{"sku":"header","cents":106}`},
		{"corr-property", "by-hand-property", `{"sku":"property","cents":108}`},
	} {
		d, ok := got[c.correlation]
		if !ok {
			t.Errorf("no reply with correlation %s", c.correlation)
			continue
		}
		if string(d.Body) != c.body {
			t.Errorf("%s: reply body %s; want %s", c.correlation, d.Body, c.body)
		}
		if causation := d.Headers["x-acemq-causation"]; causation != c.id {
			t.Errorf("%s: causation %v; want the request's id %s", c.correlation, causation, c.id)
		}
		if d.Exchange != "" || d.RoutingKey != replies.Name {
			t.Errorf("%s: reply published to %q/%q; want the default exchange and the reply queue", c.correlation, d.Exchange, d.RoutingKey)
		}
	}

	// What Do writes: a requester aimed at a queue nobody serves, read by hand.
	idle := testenv.Name(t, "idle")
	if _, err := ch.QueueDeclare(idle, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	defer testenv.DeleteTopology(url, nil, idle)
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	lonely, err := NewRequester[priceRequest, priceResponse](ctx, transport, "", idle, Options.Timeout(200*time.Millisecond), Options.Logger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer lonely.Close()
	if _, err := lonely.Do(ctx, priceRequest{SKU: "x"}); !errors.Is(err, ErrRequestTimedOut) {
		t.Fatalf("nobody answers: got %v; want ErrRequestTimedOut", err)
	}
	sent, ok, err := ch.Get(idle, true)
	if err != nil || !ok {
		t.Fatalf("the request is not in %s: %v", idle, err)
	}
	if sent.ReplyTo != lonely.ReplyQueue() || sent.Headers[HeaderReplyTo] != lonely.ReplyQueue() {
		t.Errorf("request carries reply-to %q and %s %v; want both %q", sent.ReplyTo, HeaderReplyTo, sent.Headers[HeaderReplyTo], lonely.ReplyQueue())
	}
	if sent.CorrelationId == "" {
		t.Error("the request carries no correlation id")
	}
}

// TestBrokerRequestsSurviveCloseAllConnections: rabbitmqctl
// close_all_connections during 100 sequential requests, while request 20 is
// being handled. Every request is answered with its own SKU or fails with an
// error; the one in flight fails at once with ErrReplyQueueLost rather than
// at its timeout; the requester declares its reply queue again, and every
// later request succeeds.
func TestBrokerRequestsSurviveCloseAllConnections(t *testing.T) {
	waited := time.Now()
	url := testenv.Disrupt(t)
	t.Logf("waited %s for the exclusive broker lock", time.Since(waited).Round(time.Millisecond))
	began := time.Now()
	t.Cleanup(func() { t.Logf("the test took %s with its cleanup", time.Since(began).Round(time.Millisecond)) })
	const total, inFlight = 100, 20
	holding := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	held := func(ctx context.Context, d messaging.Delivery, request priceRequest) (priceResponse, error) {
		if request.SKU == fmt.Sprint("sequential-", inFlight) {
			once.Do(func() {
				close(holding)
				<-release
			})
		}
		return price(ctx, d, request)
	}
	monitor := newFakeMonitor()
	requester, _, _ := brokerPair(t, url, held, Options.Timeout(10*time.Second), Options.ReconnectDelay(50*time.Millisecond), Options.Monitor(monitor))
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()

	type result struct {
		response priceResponse
		err      error
		took     time.Duration
	}
	do := func(i int) result {
		started := time.Now()
		response, err := requester.Do(ctx, priceRequest{SKU: fmt.Sprint("sequential-", i)})
		return result{response, err, time.Since(started)}
	}
	var (
		answered, failed int
		results          = make([]result, total)
	)
	for i := range total {
		if i == inFlight {
			done := make(chan result, 1)
			go func() { done <- do(i) }()
			<-holding
			testenv.Rabbitmqctl(t, "close_all_connections", "request test disruption")
			closed := time.Now()
			close(release)
			results[i] = <-done
			if lag := time.Since(closed); lag > 2*time.Second {
				t.Errorf("the request in flight returned %s after the connections closed; want it told when its reply queue was lost, not at its timeout", lag)
			}
			continue
		}
		results[i] = do(i)
	}
	for i, r := range results {
		switch {
		case r.err != nil:
			failed++
			t.Logf("request %d failed after %s: %v", i, r.took.Round(time.Millisecond), r.err)
			if i != inFlight {
				t.Errorf("request %d failed; want only the one in flight (%d) to fail", i, inFlight)
			}
		case r.response.SKU != fmt.Sprint("sequential-", i):
			t.Errorf("request %d answered for %q", i, r.response.SKU)
		default:
			answered++
		}
	}
	slowest := 0
	for i, r := range results {
		if r.took > results[slowest].took {
			slowest = i
		}
	}
	t.Logf("%d answered, %d failed with an error; the slowest, request %d, took %s", answered, failed, slowest, results[slowest].took.Round(time.Millisecond))
	if answered+failed != total {
		t.Fatalf("%d answered + %d failed != %d", answered, failed, total)
	}
	if r := results[inFlight]; r.err != nil && (!errors.Is(r.err, ErrReplyQueueLost) || !messaging.IsOutage(r.err)) {
		t.Errorf("the request in flight failed with %v; want ErrReplyQueueLost, marked an outage", r.err)
	}
	if got := monitor.count(OutcomeAnswered) + monitor.count(OutcomeFailed) + monitor.count(OutcomeTimedOut); got != total {
		t.Errorf("the monitor heard %d requests; want %d", got, total)
	}
	// The reply queue is back, exclusive to the requester's new connection:
	// another connection is refused access to it (405), not told it is missing (404).
	err := withChannel(url, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(requester.ReplyQueue(), false, true, true, false, nil)
		return err
	})
	var amqpErr *amqp.Error
	if err != nil && (!errors.As(err, &amqpErr) || amqpErr.Code != amqp.ResourceLocked) {
		t.Errorf("the reply queue %s is not there after the reconnect: %v", requester.ReplyQueue(), err)
	}
	if !strings.HasPrefix(requester.ReplyQueue(), "acemq-reply-") {
		t.Errorf("reply queue %q", requester.ReplyQueue())
	}
}

// TestBrokerNamedReplyQueueIsDurableQuorum: Options.ReplyTo reads replies from
// the named queue, declared durable and quorum, left behind by Close.
func TestBrokerNamedReplyQueueIsDurableQuorum(t *testing.T) {
	url := testenv.Broker(t)
	named := testenv.Name(t, "replies")
	t.Cleanup(func() { testenv.DeleteTopology(url, nil, named) })
	requester, _, _ := brokerPair(t, url, price, Options.ReplyTo(named))
	if requester.ReplyQueue() != named {
		t.Fatalf("ReplyQueue() = %q; want %q", requester.ReplyQueue(), named)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	response, err := requester.Do(ctx, priceRequest{SKU: "named"})
	if err != nil || response.SKU != "named" {
		t.Fatalf("got %+v, %v", response, err)
	}
	if err := requester.Close(); err != nil {
		t.Fatal(err)
	}
	// Declared again as a durable quorum queue, it is equivalent: no 406.
	err = withChannel(url, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(named, true, false, false, false, amqp.Table{"x-queue-type": "quorum"})
		return err
	})
	if err != nil {
		t.Errorf("the named reply queue is not a durable quorum queue that outlives the requester: %v", err)
	}
}

// TestBrokerAForgedReplyIsNeverAccepted: while the responder works, a reply
// is published into the requester's reply queue with the waiting caller's
// correlation id and a causation id that is not the request's id. The caller
// is not handed it: it is dropped and counted (Monitor.ReplyRefused), and
// the genuine reply that follows is the one Do returns.
func TestBrokerAForgedReplyIsNeverAccepted(t *testing.T) {
	url := testenv.Broker(t)
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	forger, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	monitor := newFakeMonitor()
	forge := func(ctx context.Context, d messaging.Delivery, request priceRequest) (priceResponse, error) {
		address, _ := ReplyAddress(d)
		err := forger.PublishWithContext(ctx, "", address, false, false, amqp.Publishing{
			ContentType: "application/json", CorrelationId: d.CorrelationID, MessageId: "forged-reply",
			Headers: amqp.Table{"x-acemq-correlation": d.CorrelationID, "x-acemq-causation": "not-" + d.MessageID},
			Body:    []byte(`{"sku":"forged","cents":1}`),
		})
		if err != nil {
			return priceResponse{}, fmt.Errorf("forge: %w", err)
		}
		select { // the genuine reply goes out once the forged one was refused
		case <-monitor.refused:
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		return price(ctx, d, request)
	}
	requester, _, _ := brokerPair(t, url, forge, Options.Monitor(monitor))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	response, err := requester.Do(ctx, priceRequest{SKU: "genuine"})
	if err != nil || response.SKU != "genuine" || response.Cents != 100+len("genuine") {
		t.Fatalf("Do returned %+v, %v; want the genuine answer", response, err)
	}
	if got := monitor.count("refused"); got != 1 {
		t.Errorf("%d replies refused; want the forged one", got)
	}
	if got := monitor.count("dropped"); got != 0 {
		t.Errorf("%d replies dropped as unmatched; want 0 (the genuine one was matched)", got)
	}
}
