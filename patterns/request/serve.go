package request

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/streaming"
)

// Server is a running responder: Serve's consumer of the request queue, the
// Handler it runs, and the writer of the replies. It is a
// messaging.ListenCloser whose Listen is already running.
type Server[Req, Resp any] struct {
	handler  *Handler[Req, Resp]
	consumer *streaming.Consumer
	writer   *batch.Writer
	once     sync.Once
	closeErr error
}

var _ messaging.ListenCloser = (*Server[int, int])(nil)

// Serve answers the requests that arrive on queue with fn until Close. It
// declares queue (durable) with its {queue}.dlq and {queue}.parked, starts a
// streaming consumer with Options.Workers workers, and returns once the
// consumer opened its stream (ctx bounds that start; a permanent fault, a
// queue declared otherwise for one, is returned and what started is closed).
// Replies go through one batch.Writer over connector, shared by the workers
// (their publishes pipelined on one channel), which dials again after a lost
// connection. The connector is not
// closed by Close; its owner closes it.
func Serve[Req, Resp any](ctx context.Context, connector messaging.Connector, queue string, fn Func[Req, Resp], options ...Option) (*Server[Req, Resp], error) {
	if connector == nil || queue == "" || fn == nil {
		return nil, errors.New("acemq: Serve needs a connector, a queue and a function")
	}
	cfg := newConfig(options)
	writer := batch.New(connector)
	handler := NewHandler(writer, fn, options...)
	workers := make([]messaging.Handler, cfg.workers)
	for i := range workers {
		workers[i] = handler
	}
	drain := streaming.SubscriptionOptions.ShutdownStrategy(streaming.ShutdownStrategyDrain, cfg.closeTimeout)
	subscription := append(append([]streaming.SubscriptionOption{drain}, cfg.subscription...),
		streaming.SubscriptionOptions.AddWorkers(workers...),
		streaming.SubscriptionOptions.FullDeliveryToHandler(true))
	consumer := streaming.New(connector,
		streaming.Options.Logger(cfg.logger),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue, subscription...)))
	s := &Server[Req, Resp]{handler: handler, consumer: consumer, writer: writer}
	if err := consumer.Start(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("acemq: serving %q did not start: %w", queue, err)
	}
	return s, nil
}

// Answered counts the replies published (Handler.Answered).
func (s *Server[Req, Resp]) Answered() uint64 { return s.handler.Answered() }

// Unanswerable counts the requests dead-lettered for carrying no reply
// address (Handler.Unanswerable).
func (s *Server[Req, Resp]) Unanswerable() uint64 { return s.handler.Unanswerable() }

// Listen blocks until the server has stopped.
func (s *Server[Req, Resp]) Listen() { <-s.consumer.Done() }

// Close stops consuming and waits while the workers finish the requests in
// hand, for Options.CloseTimeout at most: past it their handlers are
// cancelled, their requests go back to the queue, and the error matches
// messaging.ErrShutdownForced. Then it closes the reply writer.
func (s *Server[Req, Resp]) Close() error {
	s.once.Do(func() {
		s.closeErr = errors.Join(s.consumer.Close(), s.writer.Close())
	})
	return s.closeErr
}
