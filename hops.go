package messaging

import (
	"context"
	"sync"
)

// A batch that retry runs again (or that a settlement decorator re-runs one
// message at a time to find the one that fails) runs every hop its handlers
// publish again. A hop written through the handler's own transaction is rolled
// back with it, so running it again is right; a hop published straight to the
// broker is not, and would reach the next step twice. The hop record below
// lets such a publisher publish each hop once per batch, however many times
// the batch runs.

type hopsKey struct{}

// hopRecord holds the keys of the hops published while one batch is handled.
type hopRecord struct {
	mu   sync.Mutex
	done map[string]struct{}
}

// WithHopRecord returns a context in which PublishOnce remembers what it
// published, for as long as that context is used: retry calls it once per
// batch, outside the runs it repeats (a settlement decorator's WithSettler
// does the same). A context that already carries a record is returned
// unchanged, so the outermost one counts.
func WithHopRecord(ctx context.Context) context.Context {
	if _, ok := ctx.Value(hopsKey{}).(*hopRecord); ok {
		return ctx
	}
	return context.WithValue(ctx, hopsKey{}, &hopRecord{})
}

// PublishOnce calls publish unless a call with the same key already succeeded
// while this batch was handled (see WithHopRecord), and remembers key when
// publish returns nil. A failed publish is not remembered, so the next run
// tries again. key names the hop: the delivery's message id and the step, for
// example. Without a record in ctx it always calls publish.
//
// Calls for one key are not serialized: two concurrent calls with the same key
// in one batch may both publish. Give each hop its own key.
func PublishOnce(ctx context.Context, key string, publish func() error) error {
	record, _ := ctx.Value(hopsKey{}).(*hopRecord)
	if record == nil {
		return publish()
	}
	record.mu.Lock()
	_, done := record.done[key]
	record.mu.Unlock()
	if done {
		return nil
	}
	if err := publish(); err != nil {
		return err
	}
	record.mu.Lock()
	if record.done == nil {
		record.done = make(map[string]struct{})
	}
	record.done[key] = struct{}{}
	record.mu.Unlock()
	return nil
}
