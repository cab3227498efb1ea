package memory

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/warrenmq/messaging"
)

// A Read already waiting when a message with a TTL is published to another
// queue (a rung dead-lettering into the waiting reader's queue) must wake
// when that message expires, with nothing else touching the broker: the
// scheduler's and retry's ladders rely on it.
func TestAWaitingReaderWakesForAnExpiryPublishedAfterItBeganWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New()
		defer func() { _ = b.Close() }()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(b.DeclareExchange("acemq.retry", KindDirect, true))
		must(b.DeclareQueue("orders", QueueOptions{Durable: true}))
		must(b.Bind("orders", "acemq.retry", "orders"))
		must(b.DeclareQueue("orders.retry.10s", QueueOptions{Durable: true, Arguments: map[string]any{
			"x-message-ttl": int64(10_000), "x-dead-letter-exchange": "acemq.retry", "x-dead-letter-routing-key": "orders",
		}}))
		ctx := context.Background()
		conn, err := b.Connect(ctx)
		must(err)
		reader, err := conn.Reader(ctx)
		must(err)
		s, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: "orders"})
		must(err)

		read := make(chan time.Time, 1)
		go func() {
			var d messaging.Delivery
			if err := s.Read(ctx, &d); err == nil {
				read <- time.Now()
			}
		}()
		synctest.Wait() // the reader waits, with no expiry anywhere
		published := time.Now()
		must(b.Publish(ctx, messaging.Dispatch{RoutingKey: "orders.retry.10s", Mandatory: true}))

		select {
		case at := <-read:
			if waited := at.Sub(published); waited != 10*time.Second {
				t.Fatalf("the reader woke %s after the publish; want the TTL, 10s", waited)
			}
		case <-time.After(time.Hour):
			t.Fatal("the waiting reader never saw the expired message")
		}
	})
}
