package memory

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

// The memory connection declares retry rungs as RabbitMQ does, so a retry wait
// held by the broker comes back to its queue after the rung's TTL.
func TestARetryRungHoldsAMessageForItsTTLThenReturnsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New()
		defer func() { _ = b.Close() }()
		ctx := context.Background()
		conn, err := b.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.DeclareQueue("orders", QueueOptions{Durable: true}); err != nil {
			t.Fatal(err)
		}
		declarer := conn.(interface {
			DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error
		})
		rung := retrypolicy.RungName("orders", time.Minute)
		if err := declarer.DeclareRetryRung(ctx, "orders", rung, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := declarer.DeclareRetryRung(ctx, "orders", rung, time.Minute); err != nil {
			t.Fatalf("declaring the same rung again must succeed: %v", err)
		}
		err = declarer.DeclareRetryRung(ctx, "orders", "orders.later", time.Minute)
		if err == nil || !strings.Contains(err.Error(), "must be named") {
			t.Fatalf("a rung named apart from its TTL: %v", err)
		}

		if err := b.Publish(ctx, messaging.Dispatch{RoutingKey: rung, MessageID: "m1", Mandatory: true}); err != nil {
			t.Fatal(err)
		}
		reader, _ := conn.Reader(ctx)
		s, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var d messaging.Delivery
		if err := s.Read(ctx, &d); err != nil {
			t.Fatal(err)
		}
		if d.MessageID != "m1" || time.Since(start) != time.Minute {
			t.Fatalf("read %q after %s; want m1 after the rung's minute", d.MessageID, time.Since(start))
		}
	})
}
