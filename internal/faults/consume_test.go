package faults

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// faultMessage is the body every scenario publishes through serialization.
type faultMessage struct {
	ID string
}

const faultMessageType = "fault-message"

// Scenario 1: consume N messages through streaming + serialization + retry
// while rabbitmqctl close_all_connections runs every 2 s (short form: 1 s).
func TestFaultConsumeWhileConnectionsClose(t *testing.T) {
	url := testenv.Disrupt(t)
	n := size(5_000, 50_000)
	interval := size(time.Second, 2*time.Second)
	// Handling is paced like real work (short 5 s, full 25 s in all) so that
	// the consumer spans several disruptions instead of finishing before the
	// first.
	pace := size(time.Millisecond, 500*time.Microsecond)
	queue := testenv.Name(t, "consume")
	exchange := testenv.Name(t, "consume-ex")
	declareQueue(t, url, queue, exchange)
	connName := testenv.Name(t, "conn")
	base := takeBaseline(t, connName)
	started := time.Now()
	tl := newTally()

	publishAll(t, url, connName, exchange, ids(n), tl)

	connector := serialization.New(transport(t, url, connName),
		serialization.Options.ReadTypes(map[string]reflect.Type{faultMessageType: reflect.TypeOf(faultMessage{})}))
	handler := retry.New(messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		for _, m := range messages {
			message, ok := m.(faultMessage)
			if !ok {
				panic(messaging.Fatalf("fault suite: handed %T, want faultMessage", m))
			}
			tl.handle(message.ID)
		}
		work(time.Duration(len(messages)) * pace)
	}), retry.Options.Backoff(50*time.Millisecond), retry.Options.Logger(logger(t)))
	consumer := streaming.New(connector,
		streaming.Options.Logger(logger(t)),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.AddWorkers(handler),
			streaming.SubscriptionOptions.EstablishTopology(false),
			streaming.SubscriptionOptions.DeadLetters(false),
			streaming.SubscriptionOptions.BufferCapacity(1000),
			streaming.SubscriptionOptions.BatchCapacity(100),
			streaming.SubscriptionOptions.ReconnectDelay(100*time.Millisecond),
		)))
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()

	closer := every(interval, closeAllConnections)
	done := testenv.Poll(size(90*time.Second, 10*time.Minute), func() bool { return tl.missing() == 0 })
	closes := stopDisruptor(t, closer)

	if err := consumer.Close(); err != nil {
		t.Errorf("close the consumer: %v", err)
	}
	select {
	case <-listening:
	case <-time.After(30 * time.Second):
		t.Fatalf("Listen did not return within 30 s of Close")
	}
	if err := connector.Close(); err != nil {
		t.Errorf("close the connector: %v", err)
	}
	if !done {
		t.Errorf("not every confirmed message was handled within the bound; %d missing", tl.missing())
	}
	t.Logf("close_all_connections ran %d time(s)", closes)
	report(t, "consume-close-connections", tl, started)
	base.check(t)
}

// publishAll publishes one faultMessage per id to exchange (routing key
// "fault") through the batch writer over serialization, 500 per call, and
// records what was confirmed.
func publishAll(t *testing.T, url, connName, exchange string, messageIDs []string, tl *tally) {
	t.Helper()
	publishChunks(t, url, connName, exchange, messageIDs, 500, nil, tl)
}

// publishChunks is publishAll with per messages a call, calling between (when
// not nil) after each call with the number of ids published so far.
func publishChunks(t *testing.T, url, connName, exchange string, messageIDs []string, per int, between func(published int), tl *tally) {
	t.Helper()
	connector := serialization.New(transport(t, url, connName),
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(faultMessage{}): faultMessageType}))
	defer func() { _ = connector.Close() }()
	writer := batch.New(connector)
	defer func() { _ = writer.Close() }()
	for start := 0; start < len(messageIDs); start += per {
		chunk := messageIDs[start:min(start+per, len(messageIDs))]
		tl.send(chunk...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := writer.Write(ctx, dispatches(exchange, chunk)...)
		cancel()
		if err != nil {
			t.Fatalf("publish before the fault: %v", err)
		}
		tl.confirm(chunk...)
		if between != nil {
			between(start + len(chunk))
		}
	}
}

// dispatches builds one mandatory faultMessage per id, for exchange under
// routing key "fault" (serialization would name the exchange after the message
// type if Topic were empty).
func dispatches(exchange string, messageIDs []string) []messaging.Dispatch {
	out := make([]messaging.Dispatch, len(messageIDs))
	for i, id := range messageIDs {
		out[i] = messaging.Dispatch{Topic: exchange, RoutingKey: "fault", MessageID: id, Mandatory: true, Message: faultMessage{ID: id}}
	}
	return out
}

// landed returns the ids of the dispatches a Write reported as landed: all of
// them on success, those the *messaging.PublishError confirmed otherwise.
func landed(messageIDs []string, err error) []string {
	if err == nil {
		return messageIDs
	}
	var publishErr *messaging.PublishError
	if !errors.As(err, &publishErr) {
		return nil
	}
	var out []string
	for _, r := range publishErr.Results {
		if r.Err == nil && r.Confirmed && r.MessageID != "" {
			out = append(out, r.MessageID)
		}
	}
	return out
}
