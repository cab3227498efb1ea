package deadletter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
)

// errNoDeclarer reports a connection that cannot declare retry rungs.
var errNoDeclarer = errors.New("deadletter: the transport's connection cannot declare retry rungs (it does not implement deadletter.Declarer)")

// publisher republishes through one lazily opened connection and commit
// writer, redialling after any error. Calls are serialised; waiting for the
// turn is bounded by the caller's context.
type publisher struct {
	connector  messaging.Connector
	turn       chan struct{}
	connection messaging.Connection
	writer     messaging.CommitWriter
	rungs      map[string]bool
}

func newPublisher(connector messaging.Connector) *publisher {
	return &publisher{connector: connector, turn: make(chan struct{}, 1), rungs: map[string]bool{}}
}

func (p *publisher) acquire(ctx context.Context) error {
	select {
	case p.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("deadletter: waiting for the publisher: %w", ctx.Err())
	}
}

func (p *publisher) release() { <-p.turn }

// publish writes one dispatch and returns when the broker confirmed and routed
// it (the CommitWriter contract), or with why not. A kept connection found dead
// (closed under it since its last use) is replaced and the publish tried once
// more on the new one, so a connection lost between two set-asides does not
// fail the next one.
func (p *publisher) publish(ctx context.Context, dispatch messaging.Dispatch) error {
	if err := p.acquire(ctx); err != nil {
		return err
	}
	defer p.release()
	reused := p.writer != nil
	err := p.publishOnce(ctx, dispatch)
	if err != nil && reused && ctx.Err() == nil && staleConnection(err) {
		err = p.publishOnce(ctx, dispatch)
	}
	return err
}

func (p *publisher) publishOnce(ctx context.Context, dispatch messaging.Dispatch) error {
	if err := p.open(ctx); err != nil {
		return err
	}
	if _, err := p.writer.Write(ctx, dispatch); err != nil {
		if !errors.Is(err, messaging.ErrWireLimit) {
			p.reset() // a refusal before sending leaves the connection sound
		}
		return fmt.Errorf("deadletter: publish to %q: %w", dispatch.RoutingKey, err)
	}
	if err := p.writer.Commit(); err != nil {
		p.reset()
		return fmt.Errorf("deadletter: confirm publish to %q: %w", dispatch.RoutingKey, err)
	}
	return nil
}

// staleConnection reports a failure that a fresh connection may not have: the
// kept one was closed, or lost before the confirm. A refusal of the message
// itself (unroutable, a wire limit, a nack) is not retried.
func staleConnection(err error) bool {
	if errors.Is(err, messaging.ErrWireLimit) || errors.Is(err, messaging.ErrUnroutable) || errors.Is(err, messaging.ErrRefused) {
		return false
	}
	return errors.Is(err, messaging.ErrClosed) || errors.Is(err, messaging.ErrArrivalUnknown) || messaging.IsOutage(err)
}

// declareRung declares queue's rung named rung for delay once per connection.
func (p *publisher) declareRung(ctx context.Context, queue, rung string, delay time.Duration) error {
	if err := p.acquire(ctx); err != nil {
		return err
	}
	defer p.release()
	if err := p.open(ctx); err != nil {
		return err
	}
	if p.rungs[rung] {
		return nil
	}
	declarer, ok := messaging.As[Declarer](p.connection)
	if !ok {
		return errNoDeclarer
	}
	if err := declarer.DeclareRetryRung(ctx, queue, rung, delay); err != nil {
		p.reset()
		return fmt.Errorf("deadletter: declare retry rung %q: %w", rung, err)
	}
	p.rungs[rung] = true
	return nil
}

func (p *publisher) open(ctx context.Context) error {
	if p.writer != nil {
		return nil
	}
	if p.connection == nil {
		connection, err := p.connector.Connect(ctx)
		if err != nil {
			return fmt.Errorf("deadletter: connect to republish: %w", err)
		}
		p.connection = connection
	}
	writer, err := p.connection.CommitWriter(ctx)
	if err != nil {
		p.reset()
		return fmt.Errorf("deadletter: open a writer to republish: %w", err)
	}
	p.writer = writer
	return nil
}

// close releases the connection once no republish is in progress.
func (p *publisher) close(ctx context.Context) error {
	if err := p.acquire(ctx); err != nil {
		return fmt.Errorf("deadletter: close: a republish is still in progress: %w", err)
	}
	defer p.release()
	p.reset()
	return nil
}

func (p *publisher) reset() {
	if p.writer != nil {
		_ = p.writer.Close()
		p.writer = nil
	}
	if p.connection != nil {
		_ = p.connection.Close()
		p.connection = nil
	}
	clear(p.rungs)
}
