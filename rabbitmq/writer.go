package rabbitmq

import (
	"context"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
)

// writer publishes with confirms on its own channel. It is safe for concurrent
// Write calls.
type writer struct {
	pub *publisher

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
// with one result per dispatch.
func (w *writer) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	if err := w.ready(); err != nil {
		return 0, err
	}
	if len(dispatches) == 0 {
		return 0, nil
	}
	messages, err := encodeAll(w.pub.config, dispatches)
	if err != nil {
		return 0, err
	}
	return w.pub.publish(ctx, publishOperation, messages)
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
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	return w.pub.close()
}

func encodeAll(config *configuration, dispatches []messaging.Dispatch) ([]outgoing, error) {
	now := config.clock.Now()
	messages := make([]outgoing, len(dispatches))
	for i, d := range dispatches {
		m, err := encodeDispatch(d, now, config.origin)
		if err != nil {
			return nil, fmt.Errorf("dispatch %d of %d was not published (nor were the others): %w", i+1, len(dispatches), err)
		}
		messages[i] = m
	}
	return messages, nil
}
