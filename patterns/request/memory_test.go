package request

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/serialization"
)

type priceRequest struct {
	SKU string `json:"sku"`
}

type priceResponse struct {
	SKU   string `json:"sku"`
	Cents int    `json:"cents"`
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// price answers every SKU with its length in cents, and fails "missing".
func price(_ context.Context, _ messaging.Delivery, request priceRequest) (priceResponse, error) {
	if request.SKU == "missing" {
		return priceResponse{}, errors.New("no such product")
	}
	return priceResponse{SKU: request.SKU, Cents: 100 + len(request.SKU)}, nil
}

// TestMemoryTwentyCallersEachGetTheirOwnAnswer runs the requester and Serve
// over the memory transport: 20 concurrent callers, 10 requests each, and
// every answer names the caller's own SKU.
func TestMemoryTwentyCallersEachGetTheirOwnAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.New(memory.Options.Logger(quiet))
		defer broker.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		monitor := newFakeMonitor()
		server, err := Serve(ctx, broker, "prices", price, Options.Workers(4), Options.Logger(quiet), Options.Monitor(monitor))
		if err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		requester, err := NewRequester[priceRequest, priceResponse](ctx, broker, "", "prices", Options.Monitor(monitor), Options.Logger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		defer requester.Close()
		if !strings.HasPrefix(requester.ReplyQueue(), "acemq-reply-") {
			t.Errorf("reply queue %q; want acemq-reply-<uuid>", requester.ReplyQueue())
		}

		const callers, each = 20, 10
		var wg sync.WaitGroup
		wrong := make(chan string, callers*each)
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					sku := fmt.Sprintf("caller-%d-%d", c, i)
					response, err := requester.Do(ctx, priceRequest{SKU: sku})
					if err != nil || response.SKU != sku || response.Cents != 100+len(sku) {
						wrong <- fmt.Sprintf("%s: got %+v, %v", sku, response, err)
					}
				}
			}()
		}
		wg.Wait()
		close(wrong)
		for w := range wrong {
			t.Error(w)
		}
		if got := server.Answered(); got != callers*each {
			t.Errorf("Answered() = %d; want %d", got, callers*each)
		}
		// The responder reports a reply after its publish returned, which may be
		// after the caller already has it: wait until every goroutine is idle.
		synctest.Wait()
		if got := monitor.count("replied"); got != callers*each {
			t.Errorf("%d replies reported published; want %d", got, callers*each)
		}
		if got := monitor.count("answered"); got != callers*each {
			t.Errorf("%d requests completed as answered; want %d", got, callers*each)
		}
	})
}

// TestMemoryResponderErrorAndTimeout: an error reply reaches the caller as the
// specified error text at once; a responder that never answers ends in
// ErrRequestTimedOut after the requester's timeout, on the bubble's clock; the
// caller's own deadline gives its context error instead.
func TestMemoryResponderErrorAndTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.New(memory.Options.Logger(quiet))
		defer broker.Close()
		ctx := context.Background()
		release := make(chan struct{})
		slow := func(ctx context.Context, d messaging.Delivery, request priceRequest) (priceResponse, error) {
			if request.SKU == "slow" {
				<-release
			}
			return price(ctx, d, request)
		}
		server, err := Serve(ctx, broker, "prices", slow, Options.Workers(2), Options.Logger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		defer close(release)
		monitor := newFakeMonitor()
		requester, err := NewRequester[priceRequest, priceResponse](ctx, broker, "", "prices",
			Options.Timeout(5*time.Second), Options.Monitor(monitor), Options.Logger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		defer requester.Close()

		started := time.Now()
		_, err = requester.Do(ctx, priceRequest{SKU: "missing"})
		if err == nil || err.Error() != "acemq: the responder failed: no such product" {
			t.Errorf("error reply: got %v; want acemq: the responder failed: no such product", err)
		}
		var responder *ResponderError
		if !errors.As(err, &responder) || responder.Text != "no such product" {
			t.Errorf("error reply is not a *ResponderError with the text: %#v", err)
		}
		if elapsed := time.Since(started); elapsed != 0 {
			t.Errorf("the error reply took %s of the clock; want none (not the timeout)", elapsed)
		}

		started = time.Now()
		_, err = requester.Do(ctx, priceRequest{SKU: "slow"})
		if !errors.Is(err, ErrRequestTimedOut) {
			t.Fatalf("slow responder: got %v; want ErrRequestTimedOut", err)
		}
		if !strings.HasPrefix(err.Error(), "acemq: no reply arrived before the deadline after 5s (correlation ") {
			t.Errorf("timeout text %q", err)
		}
		if elapsed := time.Since(started); elapsed != 5*time.Second {
			t.Errorf("timed out after %s; want 5s", elapsed)
		}

		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err = requester.Do(short, priceRequest{SKU: "slow"}); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrRequestTimedOut) {
			t.Errorf("caller's deadline: got %v; want context.DeadlineExceeded", err)
		}
		want := map[string]int{"failed": 2, "timed_out": 1}
		for outcome, n := range want {
			if got := monitor.count(outcome); got != n {
				t.Errorf("%d requests completed %s; want %d", got, outcome, n)
			}
		}
	})
}

// TestMemoryUnanswerableRequestIsDeadLettered: a request with neither reply
// address lands in {queue}.dlq with the specified error text, is counted, and is not
// retried.
func TestMemoryUnanswerableRequestIsDeadLettered(t *testing.T) {
	broker := memory.New(memory.Options.Logger(quiet))
	defer broker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := make(chan struct{}, 10)
	counted := func(ctx context.Context, d messaging.Delivery, r priceRequest) (priceResponse, error) {
		calls <- struct{}{}
		return price(ctx, d, r)
	}
	monitor := newFakeMonitor()
	server, err := Serve(ctx, broker, "prices", counted, Options.Logger(quiet), Options.Monitor(monitor))
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if err := broker.Publish(ctx, messaging.Dispatch{RoutingKey: "prices", MessageID: "nowhere-1", Payload: []byte(`{"sku":"a"}`), Mandatory: true}); err != nil {
		t.Fatal(err)
	}
	var dead messaging.Delivery
	for {
		var ok bool
		if dead, ok = broker.Pull("prices.dlq"); ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the unanswerable request did not reach prices.dlq")
		case <-time.After(5 * time.Millisecond): // polling the broker's queue
		}
	}
	if want := "acemq: request nowhere-1 carries neither a acemq-reply-to header nor a reply-to property, so there is nowhere to reply"; !strings.Contains(dead.Error, want) {
		t.Errorf("dead-letter reason %q; want it to contain %q", dead.Error, want)
	}
	if dead.Attempt != 1 {
		t.Errorf("dead-lettered at attempt %d; want 1 (never retried)", dead.Attempt)
	}
	if len(calls) != 0 {
		t.Errorf("the function ran %d times for a request nobody can hear the answer to", len(calls))
	}
	if server.Unanswerable() != 1 || monitor.count("unanswerable") != 1 {
		t.Errorf("Unanswerable() = %d, monitor %d; want 1", server.Unanswerable(), monitor.count("unanswerable"))
	}
}

// TestMemoryDoWithPassesTheEnvelopeAndALateReplyIsDropped: DoWith's
// envelope fields reach the responder, the correlation id is always fresh
// and the reply address is written both ways; a reply that comes after its
// caller timed out is acknowledged, dropped and reported.
func TestMemoryDoWithPassesTheEnvelopeAndALateReplyIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.New(memory.Options.Logger(quiet))
		defer broker.Close()
		ctx := context.Background()
		seen := make(chan messaging.Delivery, 2)
		late := func(ctx context.Context, d messaging.Delivery, r priceRequest) (priceResponse, error) {
			seen <- d
			if r.SKU == "late" {
				time.Sleep(2 * time.Second) // the bubble's clock: past the caller's timeout, at once
			}
			return price(ctx, d, r)
		}
		server, err := Serve(ctx, broker, "prices", late, Options.Logger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		monitor := newFakeMonitor()
		requester, err := NewRequester[priceRequest, priceResponse](ctx, broker, "", "prices",
			Options.Timeout(time.Second), Options.Monitor(monitor), Options.Logger(quiet), Options.MessageType("price.request"))
		if err != nil {
			t.Fatal(err)
		}
		defer requester.Close()

		envelope := messaging.Dispatch{MessageID: "asked-1", CorrelationID: "mine", CausationID: "order-7", Headers: map[string]any{"tenant": "acme"}}
		if _, err := requester.DoWith(ctx, priceRequest{SKU: "a"}, envelope); err != nil {
			t.Fatal(err)
		}
		d := <-seen
		if d.MessageID != "asked-1" || d.CausationID != "order-7" || d.Headers["tenant"] != "acme" || d.MessageType != "price.request" {
			t.Errorf("the envelope did not pass through: %+v", d)
		}
		if d.CorrelationID == "mine" || d.CorrelationID == "" {
			t.Errorf("correlation %q; want a fresh one", d.CorrelationID)
		}
		if d.ReplyTo != requester.ReplyQueue() || d.Headers[HeaderReplyTo] != requester.ReplyQueue() {
			t.Errorf("reply address %q / %v; want %q written both ways", d.ReplyTo, d.Headers[HeaderReplyTo], requester.ReplyQueue())
		}

		if _, err := requester.Do(ctx, priceRequest{SKU: "late"}); !errors.Is(err, ErrRequestTimedOut) {
			t.Fatalf("got %v; want ErrRequestTimedOut", err)
		}
		time.Sleep(2 * time.Second) // the bubble's clock: the responder answers a second after the caller gave up
		synctest.Wait()
		if got := monitor.count("dropped"); got != 1 {
			t.Errorf("%d late replies reported dropped; want 1", got)
		}
		if n := broker.MessageCount(requester.ReplyQueue()); n != 0 {
			t.Errorf("%d replies left in the reply queue; want the late one acknowledged", n)
		}
	})
}

// TestMemoryARequestNobodyServesIsUnroutableAtOnce: requests are mandatory,
// so a request to an address with no queue fails at once, not at the timeout.
func TestMemoryARequestNobodyServesIsUnroutableAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.New(memory.Options.Logger(quiet))
		defer broker.Close()
		ctx := context.Background()
		monitor := newFakeMonitor()
		requester, err := NewRequester[priceRequest, priceResponse](ctx, broker, "", "nobody", Options.Monitor(monitor), Options.Logger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		defer requester.Close()
		started := time.Now()
		if _, err := requester.Do(ctx, priceRequest{SKU: "a"}); !errors.Is(err, messaging.ErrUnroutable) {
			t.Fatalf("got %v; want messaging.ErrUnroutable", err)
		}
		if elapsed := time.Since(started); elapsed != 0 {
			t.Errorf("failed after %s; want at once", elapsed)
		}
		if monitor.count(OutcomeFailed) != 1 {
			t.Errorf("the monitor heard %d failed requests; want 1", monitor.count(OutcomeFailed))
		}
	})
}

// TestMemoryALostReplyQueueIsDeclaredAgain: when the reply queue goes away,
// the caller in flight fails at once with ErrReplyQueueLost; a caller that
// arrives meanwhile waits for the queue to be declared again (after the
// reconnect delay) and is answered; Close wakes a caller still waiting.
func TestMemoryALostReplyQueueIsDeclaredAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.New(memory.Options.Logger(quiet))
		defer broker.Close()
		ctx := context.Background()
		release := make(chan struct{})
		held := func(ctx context.Context, d messaging.Delivery, r priceRequest) (priceResponse, error) {
			if r.SKU == "held" {
				<-release
			}
			return price(ctx, d, r)
		}
		server, err := Serve(ctx, broker, "prices", held, Options.Workers(2), Options.Logger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		defer close(release)
		var logged bytes.Buffer // read once Close has stopped every writer
		requester, err := NewRequester[priceRequest, priceResponse](ctx, broker, "", "prices",
			Options.Timeout(time.Hour), Options.ReconnectDelay(time.Minute), Options.Logger(slog.New(slog.NewTextHandler(&logged, nil))))
		if err != nil {
			t.Fatal(err)
		}
		defer requester.Close()
		type result struct {
			response priceResponse
			err      error
			at       time.Duration
		}
		start := time.Now()
		ask := func(sku string) <-chan result {
			done := make(chan result, 1)
			go func() {
				response, err := requester.Do(ctx, priceRequest{SKU: sku})
				done <- result{response, err, time.Since(start)}
			}()
			return done
		}

		inFlight := ask("held")
		synctest.Wait() // the request is with the responder
		if err := broker.DeleteQueue(requester.ReplyQueue()); err != nil {
			t.Fatal(err)
		}
		if r := <-inFlight; !errors.Is(r.err, ErrReplyQueueLost) || r.at != 0 {
			t.Fatalf("the caller in flight got %v after %s; want ErrReplyQueueLost at once", r.err, r.at)
		}

		waiting := ask("meanwhile")
		r := <-waiting
		if r.err != nil || r.response.SKU != "meanwhile" {
			t.Fatalf("the caller that arrived meanwhile got %+v, %v", r.response, r.err)
		}
		if r.at < time.Minute || r.at > time.Minute+time.Second {
			t.Errorf("answered after %s; want right after the one-minute reconnect delay", r.at)
		}
		if broker.MessageCount(requester.ReplyQueue()) != 0 {
			t.Errorf("the reply queue holds messages")
		}

		if err := broker.DeleteQueue(requester.ReplyQueue()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		stranded := ask("stranded")
		synctest.Wait()
		closedAt := time.Since(start)
		if err := requester.Close(); err != nil {
			t.Fatal(err)
		}
		if r := <-stranded; !errors.Is(r.err, messaging.ErrClosed) || r.at != closedAt {
			t.Errorf("a caller waiting for the reply queue got %v at %s; want ErrClosed when Close ran (%s)", r.err, r.at, closedAt)
		}
		var lost []string
		for line := range strings.Lines(logged.String()) {
			if strings.Contains(line, "msg=\"Requester lost its reply queue") {
				lost = append(lost, line[strings.Index(line, "level="):])
			}
		}
		const warned = `level=WARN msg="Requester lost its reply queue and declares it again; requests in flight on a generated queue fail with ErrReplyQueueLost" queue=%s routing_key=prices in_flight=%d` + "\n"
		if want := []string{fmt.Sprintf(warned, requester.ReplyQueue(), 1), fmt.Sprintf(warned, requester.ReplyQueue(), 0)}; !slices.Equal(lost, want) {
			t.Errorf("the requester warned %q; want %q", lost, want)
		}
	})
}

// TestMemoryARequesterOverADecodingConnectorStillReadsItsReplies: a
// requester given a serialization-decorated connector, which knows none of
// the reply's types, reads its replies from the transport beneath it as
// bytes and decodes them with its own codec: every answer arrives.
func TestMemoryARequesterOverADecodingConnectorStillReadsItsReplies(t *testing.T) {
	broker := memory.New(memory.Options.Logger(quiet))
	defer broker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	server, err := Serve(ctx, broker, "prices", price, Options.Logger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	decoding := serialization.New(broker, serialization.Options.ReadTypes(map[string]reflect.Type{"unrelated": reflect.TypeOf(0)}))
	requester, err := NewRequester[priceRequest, priceResponse](ctx, decoding, "", "prices", Options.Logger(quiet), Options.Timeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer requester.Close()
	for i := range 3 {
		sku := fmt.Sprint("sku-", i)
		if response, err := requester.Do(ctx, priceRequest{SKU: sku}); err != nil || response.SKU != sku {
			t.Fatalf("request %d: got %+v, %v", i, response, err)
		}
	}
}

// TestMemoryServeCloseWaitsForItsCloseTimeoutThenCancels: a handler still
// running when Close is called gets Options.CloseTimeout to finish; past it
// it is cancelled, its request goes back to the queue, and Close says so.
func TestMemoryServeCloseWaitsForItsCloseTimeoutThenCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.New(memory.Options.Logger(quiet))
		defer broker.Close()
		ctx := context.Background()
		started := make(chan struct{})
		stuck := func(ctx context.Context, _ messaging.Delivery, request priceRequest) (priceResponse, error) {
			close(started)
			<-ctx.Done() // it finishes only when cancelled
			return priceResponse{}, ctx.Err()
		}
		server, err := Serve(ctx, broker, "prices", stuck, Options.CloseTimeout(3*time.Second), Options.Logger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		requester, err := NewRequester[priceRequest, priceResponse](ctx, broker, "", "prices", Options.Timeout(time.Minute), Options.Logger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		defer requester.Close()
		go func() { _, _ = requester.Do(ctx, priceRequest{SKU: "slow"}) }()
		<-started

		began := time.Now()
		err = server.Close()
		if took := time.Since(began); took < 3*time.Second || took > 4*time.Second {
			t.Errorf("Close took %s; want the 3 s close timeout", took)
		}
		if !errors.Is(err, messaging.ErrShutdownForced) {
			t.Errorf("Close = %v; want an error matching messaging.ErrShutdownForced", err)
		}
		if n := broker.MessageCount("prices"); n != 1 {
			t.Errorf("the queue holds %d message(s) after Close; want the cancelled request back", n)
		}
	})
}
