package deadletter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
)

// errNoDeclarer reports a connection that cannot declare retry rungs.
var errNoDeclarer = errors.New("deadletter: the transport's connection cannot declare retry rungs (it does not implement deadletter.Declarer)")

// publisher publishes the decorator's copies and declares its rungs through
// a batch.Writer: the module's one publisher that keeps a connection and
// redials, by one rule, after a lost one. Concurrent republishes of several
// workers are pipelined on its channel.
type publisher struct {
	writer *batch.Writer
	// owned is set when the writer is the decorator's own, closed by Close;
	// a writer given with Options.Writer is its owner's to close.
	owned bool
}

func newPublisher(connector messaging.Connector, c config) *publisher {
	if c.writer != nil {
		return &publisher{writer: c.writer}
	}
	return &publisher{writer: batch.New(connector), owned: true}
}

// publish writes one dispatch and returns when the broker confirmed it, and
// routed it when mandatory (every copy the decorator makes is), or with why
// not.
func (p *publisher) publish(ctx context.Context, dispatch messaging.Dispatch) error {
	if _, err := p.writer.Write(ctx, dispatch); err != nil {
		return fmt.Errorf("deadletter: publish to %q: %w", dispatch.RoutingKey, err)
	}
	return nil
}

// declareRung declares queue's rung named rung for delay on the connection
// the copies are published on, once per connection: a rung exists on the
// node its copy reaches.
func (p *publisher) declareRung(ctx context.Context, queue, rung string, delay time.Duration) error {
	return p.writer.Declare(ctx, "retry rung "+rung, func(ctx context.Context, connection messaging.Connection) error {
		declarer, ok := messaging.As[Declarer](connection)
		if !ok {
			return errNoDeclarer
		}
		return declarer.DeclareRetryRung(ctx, queue, rung, delay)
	})
}

// close releases the decorator's own writer once the republishes in flight
// (each bounded by Options.PublishTimeout) have returned.
func (p *publisher) close() error {
	if !p.owned {
		return nil
	}
	return p.writer.Close()
}
