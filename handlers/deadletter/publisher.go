package deadletter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redial"
)

// errNoDeclarer reports a connection that cannot declare retry rungs.
var errNoDeclarer = errors.New("deadletter: the transport's connection cannot declare retry rungs (it does not implement deadletter.Declarer)")

// publisher republishes through one lazily opened connection and commit
// writer, redialling after any error. Calls are serialised; waiting for the
// turn is bounded by the caller's context.
type publisher struct {
	link *redial.Link
	turn chan struct{}
	// rungs are the retry rungs declared on rungsOn, the kept connection.
	rungs   map[string]bool
	rungsOn messaging.Connection
	// used reports that a publish went through the kept writer since it was
	// opened: a failure on it may be the connection's, found dead.
	used bool
}

func newPublisher(connector messaging.Connector) *publisher {
	return &publisher{link: redial.New(connector, "deadletter"), turn: make(chan struct{}, 1), rungs: map[string]bool{}}
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
	reused := p.used
	err := p.publishOnce(ctx, dispatch)
	if err != nil && reused && ctx.Err() == nil && staleConnection(err) {
		err = p.publishOnce(ctx, dispatch)
	}
	return err
}

func (p *publisher) publishOnce(ctx context.Context, dispatch messaging.Dispatch) error {
	writer, connection, err := p.link.Writer(ctx)
	if err != nil {
		p.discard(connection)
		return err
	}
	p.used = true
	if _, err := writer.Write(ctx, dispatch); err != nil {
		if !errors.Is(err, messaging.ErrWireLimit) {
			p.discard(connection) // a refusal before sending leaves the connection sound
		}
		return fmt.Errorf("deadletter: publish to %q: %w", dispatch.RoutingKey, err)
	}
	if err := writer.Commit(); err != nil {
		p.discard(connection)
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
	connection, err := p.link.Connection(ctx)
	if err != nil {
		return err
	}
	if p.rungsOn != connection { // declared on another connection, which may have been a different broker node
		clear(p.rungs)
		p.rungsOn = connection
	}
	if p.rungs[rung] {
		return nil
	}
	declarer, ok := messaging.As[Declarer](connection)
	if !ok {
		return errNoDeclarer
	}
	if err := declarer.DeclareRetryRung(ctx, queue, rung, delay); err != nil {
		p.discard(connection)
		return fmt.Errorf("deadletter: declare retry rung %q: %w", rung, err)
	}
	p.rungs[rung] = true
	return nil
}

// close releases the connection once no republish is in progress. When ctx
// ends first it closes the connection under the republish, which makes it
// fail (its message stays unacknowledged and is redelivered), and reports
// messaging.ErrShutdownForced.
func (p *publisher) close(ctx context.Context) error {
	if err := p.acquire(ctx); err != nil {
		closeErr := p.link.Close()
		return errors.Join(fmt.Errorf("deadletter: close: a republish was still in progress and was cut off (%w): %w", err, messaging.ErrShutdownForced), closeErr)
	}
	defer p.release()
	p.used = false
	return p.link.Close()
}

// discard closes connection so the next publish dials again.
func (p *publisher) discard(connection messaging.Connection) {
	p.link.Discard(connection)
	p.used = false
}
