package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// poisonKind is how a poison message fails.
type poisonKind int

const (
	// alwaysPanics decodes, and the handler panics on it on every attempt.
	alwaysPanics poisonKind = iota + 1
	// notJSON carries the fault message type but a body that is not JSON.
	notJSON
	// foreign was published by someone else with a 300-byte x-acemq-id (too
	// long for the AMQP message-id property); the handler refuses it
	// (messaging.Fatal).
	foreign
)

// poison is one poison message: its id, how it fails, and where it must end.
type poison struct {
	id   string
	kind poisonKind
	want expectation
}

func newPoison(kind poisonKind) poison {
	id := messaging.NewID()
	switch kind {
	case alwaysPanics:
		return poison{id: id, kind: kind, want: expectation{".dlq", fmt.Sprintf("exhausted %d attempts: fault suite: message %s always fails", settleAttempts, id)}}
	case notJSON:
		return poison{id: id, kind: kind, want: expectation{".parked", "could not be decoded: "}}
	default:
		id += "-" + strings.Repeat("x", 300-len(id)-1)
		return poison{id: id, kind: kind, want: expectation{".dlq", "the handler reported an unprocessable message: fault suite: foreign message " + shortID(id)}}
	}
}

// publishing returns the message as a foreign publisher would send it raw.
func (p poison) publishing() amqp.Publishing {
	body, _ := json.Marshal(faultMessage{ID: p.id})
	message := amqp.Publishing{
		Headers:      amqp.Table{"x-acemq-type": faultMessageType, "x-acemq-id": p.id},
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		MessageId:    p.id,
		Body:         body,
	}
	switch p.kind {
	case notJSON:
		message.Body = []byte("not json: " + p.id)
	case foreign:
		message.MessageId = "" // 300 bytes do not fit the property; the header carries it
		message.Headers["x-foreign-app"] = "kept"
	}
	return message
}

// Scenario 7: a stream of good messages with poison among them (messages the
// handler always panics on, messages that are not JSON, foreign messages with
// a 300-byte x-acemq-id that the handler refuses) is consumed through
// streaming + serialization + deadletter + retry while
// rabbitmqctl close_all_connections runs every second (full: every 2 s). Every
// good message must be handled within a bound, and each poison message must
// end exactly once in the right set-aside queue, with the right reason.
func TestFaultConsumePoisonWhileConnectionsClose(t *testing.T) {
	url := testenv.Disrupt(t)
	n := size(1_000, 10_000)
	interval := size(1500*time.Millisecond, 2*time.Second)
	pace := size(3*time.Millisecond, time.Millisecond)
	bound := size(90*time.Second, 4*time.Minute)
	queue := testenv.Name(t, "poison")
	exchange := testenv.Name(t, "poison-ex")
	declareQueue(t, url, queue, exchange)
	declareSetAside(t, url, queue)
	connName := testenv.Name(t, "conn")
	base := takeBaseline(t, connName)
	started := time.Now()
	tl := newTally()

	var poisons []poison
	for range size(4, 10) {
		for _, kind := range []poisonKind{alwaysPanics, notJSON, foreign} {
			poisons = append(poisons, newPoison(kind))
		}
	}
	kinds := map[string]poisonKind{}
	expected := map[string]expectation{}
	for _, p := range poisons {
		kinds[p.id] = p.kind
		expected[p.id] = p.want
	}

	// Publish the good messages 100 a call, and the poison raw between calls,
	// spread over the stream so that each lands in a batch of good ones.
	raw := newRawPublisher(t, url)
	per := 100
	calls := (n + per - 1) / per
	next := 0
	publishChunks(t, url, connName, exchange, ids(n), per, func(published int) {
		call := published / per
		for next < len(poisons) && 1+next*(calls-1)/len(poisons) <= call {
			raw.publish(exchange, "fault", poisons[next].publishing())
			next++
		}
	}, tl)
	raw.close()

	var mu sync.Mutex
	handed := map[string]int{} // how often the handler was handed each poison message
	inner := messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		batch := make([]string, 0, len(messages))
		for _, m := range messages {
			message, ok := m.(faultMessage)
			if !ok {
				panic(messaging.Fatalf("fault suite: handed %T, want faultMessage", m))
			}
			kind := kinds[message.ID]
			if kind != 0 {
				mu.Lock()
				handed[message.ID]++
				mu.Unlock()
			}
			switch kind {
			case alwaysPanics:
				panic(fmt.Errorf("fault suite: message %s always fails", message.ID))
			case foreign:
				panic(messaging.Fatalf("fault suite: foreign message %s refused", shortID(message.ID)))
			case notJSON:
				panic(messaging.Fatalf("fault suite: message %s is not JSON and decoded anyway", message.ID))
			}
			batch = append(batch, message.ID)
		}
		work(time.Duration(len(batch)) * pace)
		tl.handle(batch...)
	})
	connector := transport(t, url, connName)
	encoded := serialization.New(connector,
		serialization.Options.ReadTypes(map[string]reflect.Type{faultMessageType: reflect.TypeOf(faultMessage{})}),
		serialization.Options.Logger(quietLogger()))
	settled := &settleCounter{}
	handler := deadletter.New(connector,
		retry.New(inner,
			retry.Options.Policy(retrypolicy.Exponential(settleAttempts, 20*time.Millisecond, 200*time.Millisecond)),
			retry.Options.LogStackTrace(false),
			retry.Options.Logger(quietLogger()),
		),
		deadletter.Options.Policy(retrypolicy.Fixed(settleAttempts, 0)),
		deadletter.Options.Monitor(settled),
		deadletter.Options.Logger(logger(t)),
	)
	consumer := streaming.New(encoded,
		streaming.Options.Logger(logger(t)),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.AddWorkers(handler, handler),
			streaming.SubscriptionOptions.EstablishTopology(false),
			streaming.SubscriptionOptions.BufferCapacity(500),
			streaming.SubscriptionOptions.BatchCapacity(100),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.ReconnectDelay(100*time.Millisecond),
		)))
	listening := make(chan struct{})
	consuming := time.Now()
	go func() { defer close(listening); consumer.Listen() }()

	closer := every(interval, closeAllConnections)
	goodDone := testenv.Poll(bound, func() bool { return tl.missing() == 0 })
	goodTook := time.Since(consuming)
	wantDLQ, wantParked := 0, 0
	for _, want := range expected {
		if want.target == ".dlq" {
			wantDLQ++
		} else {
			wantParked++
		}
	}
	asideDone := testenv.Poll(time.Minute, func() bool {
		return queueDepth(url, queue+".dlq") >= wantDLQ && queueDepth(url, queue+".parked") >= wantParked
	})
	closes := stopDisruptor(t, closer)
	// The last close's redeliveries settle: the broker holds nothing of the
	// queue, ready or unacknowledged. Then nothing may move for 3 s: a poison
	// message that loops (set aside, redelivered, set aside again) would be
	// handed to the handler or set aside again within that, and the test fails
	// as soon as it does.
	testenv.Eventually(t, 30*time.Second, "the queue to hold nothing once the disruptions stopped", func() bool {
		out, err := rabbitmqctl(context.Background(), "-q", "list_queues", "name", "messages", "--no-table-headers")
		return err == nil && slices.Contains(strings.Split(out, "\n"), queue+"\t0")
	})
	quiet := poisonActivity(&mu, handed, settled)
	var after [2]int64
	if testenv.Poll(3*time.Second, func() bool { after = poisonActivity(&mu, handed, settled); return after != quiet }) {
		t.Errorf("poison messages kept moving once the queue had settled after the last disruption (handed to the handler and set aside: %v, then %v): a redelivery loop", quiet, after)
	}

	if err := consumer.Close(); err != nil {
		t.Errorf("close the consumer: %v", err)
	}
	select {
	case <-listening:
	case <-time.After(30 * time.Second):
		t.Fatalf("Listen did not return within 30 s of Close")
	}
	if err := encoded.Close(); err != nil {
		t.Errorf("close the connector: %v", err)
	}
	if depth := queueDepth(url, queue); depth != 0 {
		t.Errorf("the source queue holds %d message(s) after everything was handled or set aside; want 0", depth)
	}
	if !goodDone {
		t.Errorf("the good messages were held back: %d not handled within %s", tl.missing(), bound)
	}
	if !asideDone {
		t.Errorf("the poison messages were not all set aside within a minute of the good ones being handled")
	}
	most := 0
	for _, p := range poisons {
		if p.kind == foreign {
			most = max(most, handed[p.id])
		}
	}
	t.Logf("close_all_connections ran %d time(s); the good messages were handled in %s; a foreign message was handed to the handler at most %d time(s)",
		closes, goodTook.Round(100*time.Millisecond), most)
	t.Logf("settlement by the scenario's decorator (the runtime's own may park undecodable ones first): %d dead-lettered, %d parked, %d held for an outage, %d failed republishes",
		settled.deadLettered.Load(), settled.parked.Load(), settled.held.Load(), settled.failed.Load())

	aside := drainSetAside(t, url, queue)
	report(t, "poison", tl, started)
	r := aside.against(expected)
	reportSetAside("poison", aside, r)
	if len(r.missing) > 0 {
		t.Errorf("poison: %d poison message(s) never set aside: %s", len(r.missing), shortIDs(r.missing))
	}
	if len(r.misplaced) > 0 {
		t.Errorf("poison: %d message(s) set aside in the wrong queue or not poison at all: %s", len(r.misplaced), shortIDs(r.misplaced))
	}
	// A copy confirmed just before a close took the acknowledgement with it is
	// set aside again when the broker redelivers the original: at least once,
	// like the handled duplicates. More copies of one message than closes
	// would be a loop.
	for _, id := range r.duplicated {
		copies := len(aside.dlq[id]) + len(aside.parked[id])
		t.Logf("poison: %s was set aside %d times (its acknowledgement died with a connection)", shortID(id), copies)
		if copies > closes+1 {
			t.Errorf("poison: %s was set aside %d times with %d close(s): more than one copy per close is a loop", shortID(id), copies, closes)
		}
	}
	if len(r.wrongReason) > 0 {
		t.Errorf("poison: %d poison message(s) set aside with the wrong reason: %s", len(r.wrongReason), strings.Join(r.wrongReason[:min(len(r.wrongReason), 3)], "; "))
	}
	base.check(t)
}

// rawPublisher is the checker's confirmed channel for publishing messages the
// way a foreign publisher would, with the raw client.
type rawPublisher struct {
	t    *testing.T
	conn *amqp.Connection
	ch   *amqp.Channel
}

func newRawPublisher(t *testing.T, url string) *rawPublisher {
	t.Helper()
	conn, ch := dialChecker(t, url)
	if err := ch.Confirm(false); err != nil {
		_ = conn.Close()
		t.Fatalf("checker: confirm mode: %v", err)
	}
	return &rawPublisher{t: t, conn: conn, ch: ch}
}

func (p *rawPublisher) publish(exchange, key string, message amqp.Publishing) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	confirm, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, message)
	if err != nil {
		p.t.Fatalf("checker: publish to %s: %v", exchange, err)
	}
	if ok, err := confirm.WaitContext(ctx); err != nil || !ok {
		p.t.Fatalf("checker: publish to %s not confirmed: %v", exchange, err)
	}
}

func (p *rawPublisher) close() { _ = p.conn.Close() }

// poisonActivity sums how often the handler was handed a poison message and
// how many messages were set aside, for the loop check.
func poisonActivity(mu *sync.Mutex, handed map[string]int, settled *settleCounter) [2]int64 {
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range handed {
		total += n
	}
	return [2]int64{int64(total), settled.deadLettered.Load() + settled.parked.Load()}
}
