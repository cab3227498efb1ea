package rabbitmq

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// writer publishes with confirms on its own channel. It is safe for concurrent
// Write calls.
type writer struct {
	pub *publisher
	// onClose, when set, tells the handle that opened it that it closed.
	onClose func()

	mu     sync.Mutex
	closed bool
}

// Writer opens a confirm-mode channel for publishing.
func (c *connection) Writer(ctx context.Context) (messaging.Writer, error) {
	pub, err := newPublisher(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("open a writer: %w", err)
	}
	return &writer{pub: pub}, nil
}

// Write publishes every dispatch, pipelined, and waits for the broker to confirm
// them. It returns how many landed and, when not all did, a *messaging.PublishError
// with one result per dispatch. A dispatch that cannot travel on AMQP (a field
// over its wire limit, a header value a table cannot carry, a payload over
// Options.MaxMessageSize, a reserved header) is refused alone before anything
// is sent: its result wraps messaging.ErrWireLimit (a *messaging.FieldError)
// or the reserved-header error, and the others are published.
func (w *writer) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	if err := w.ready(); err != nil {
		return 0, err
	}
	if len(dispatches) == 0 {
		return 0, nil
	}
	return w.pub.publish(ctx, publishOperation, encodeAll(w.pub.config, dispatches))
}

func (w *writer) ready() error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return fmt.Errorf("write to a closed writer; open a new one: %w", messaging.ErrClosed)
	}
	if err := w.pub.conn.usable(); err != nil {
		return err
	}
	return w.pub.conn.pausedError()
}

// Close closes the writer's channel. Publishes awaiting a confirm are answered
// with messaging.ErrArrivalUnknown.
func (w *writer) Close() error {
	if !markClosed(&w.mu, &w.closed) {
		return nil
	}
	if w.onClose != nil {
		w.onClose()
	}
	return w.pub.close()
}

// encodeAll encodes every dispatch. One that cannot travel (wire.Check) is kept
// as a refused message: the publisher answers it with its error in the
// *messaging.PublishError and publishes the others, so one bad field never
// costs the rest of the write, nor the connection.
func encodeAll(cfg *config, dispatches []messaging.Dispatch) []outgoing {
	encoder := wire.NewEncoder(time.Now(), cfg.origin)
	messages := make([]outgoing, len(dispatches))
	for i, d := range dispatches {
		m, err := encodeDispatch(d, &encoder, cfg.maxMessageSize)
		if err != nil {
			m = outgoing{id: d.MessageID, exchange: d.Topic, key: d.RoutingKey,
				refused: fmt.Errorf("dispatch %d of %d was not published (the others were): %w", i+1, len(dispatches), err)}
		}
		messages[i] = m
	}
	return messages
}
