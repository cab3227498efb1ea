package retry

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

// A batch of ten run three times by retry (it fails twice after publishing)
// publishes each message's hop once: the hop record outlives the runs.
func TestABatchRunAgainDoesNotPublishItsHopsTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var published, runs atomic.Int32
		inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			runs.Add(1)
			for _, message := range messages {
				err := messaging.PublishOnce(ctx, message.(string)+"/next", func() error {
					published.Add(1)
					return nil
				})
				if err != nil {
					panic(err)
				}
			}
			if runs.Load() < 3 {
				panic(errors.New("the database said no"))
			}
		})
		batch := []any{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
		New(inner, Options.Policy(retrypolicy.Default())).Handle(context.Background(), batch...)
		if runs.Load() != 3 || published.Load() != 10 {
			t.Fatalf("runs %d, hops published %d: want 3 runs and 10 hops", runs.Load(), published.Load())
		}
		// A new batch is a new record: its hops are published again.
		New(inner).Handle(context.Background(), "a")
		if published.Load() != 11 {
			t.Fatalf("hops published %d after a new batch; want 11", published.Load())
		}
	})
}
