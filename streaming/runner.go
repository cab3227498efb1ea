package streaming

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/internal/wait"
)

// runner is one subscription's reconnect loop. It owns its connection.
type runner struct {
	connector    messaging.Connector
	subscription *Subscription
	logger       *slog.Logger
	monitor      Monitor
	soft         context.Context
	failures     int
	health       *health
	// workers are the subscription's handlers, each wrapped in the runtime's
	// settlement (see settlement.go).
	workers []messaging.Handler
	// settlement configures the workers' settlement; it names the retry rungs
	// declared when a session starts.
	settlement []deadletter.Option
	// startup hears how the first attempt to open the stream concluded.
	startup    *startup
	openedOnce sync.Once
	// forced is set when a session's shutdown had to cancel its handlers.
	forced atomic.Bool
}

// firstOpen reports how the first attempt to open the stream concluded.
func (r *runner) firstOpen(err error) {
	r.openedOnce.Do(func() { r.startup.report(err) })
}

func newRunner(connector messaging.Connector, writer *batch.Writer, subscription *Subscription, cfg config, soft context.Context, startup *startup) *runner {
	return &runner{
		connector:    connector,
		subscription: subscription,
		logger:       cfg.logger,
		monitor:      cfg.monitor,
		soft:         soft,
		health:       newHealth(subscription.queue, cfg),
		workers:      settled(connector, writer, subscription, cfg),
		settlement:   settlementOptions(writer, subscription, cfg),
		startup:      startup,
	}
}

// close releases what the runtime's settlement opened and reports a shutdown
// that had to be forced.
func (r *runner) close() error {
	var errs []error
	if r.forced.Load() {
		errs = append(errs, fmt.Errorf("streaming: stream %q: handlers missed the shutdown timeout (%s): %w",
			r.subscription.queue, r.subscription.shutdownTimeout, messaging.ErrShutdownForced))
	}
	for _, worker := range r.workers {
		if closer, ok := worker.(io.Closer); ok {
			if err := closer.Close(); err != nil {
				r.logger.Warn(fmt.Sprintf("Unable to close the settlement of stream [%s] [%v].", r.subscription.queue, err),
					slog.String("stream", r.subscription.queue), slog.Any("error", err))
				errs = append(errs, fmt.Errorf("streaming: stream %q: close its settlement: %w", r.subscription.queue, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (r *runner) run() {
	queue := r.subscription.queue
	if len(r.subscription.workers) == 0 {
		r.firstOpen(fmt.Errorf("streaming: subscription to stream %q has no workers; add handlers with SubscriptionOptions.AddWorkers", queue))
		r.logger.Error(fmt.Sprintf("Subscription to stream [%s] has no workers; add handlers with SubscriptionOptions.AddWorkers.", queue),
			slog.String("stream", queue))
		return
	}
	for r.soft.Err() == nil {
		healthy, err := r.session()
		if r.soft.Err() != nil {
			return
		}
		delay := r.nextDelay(healthy, err)
		r.logger.Info(fmt.Sprintf("Subscription to stream [%s] concluded; reconnecting in [%s].", queue, delay),
			slog.String("stream", queue), slog.Duration("delay", delay))
		if wait.For(r.soft, delay) != nil {
			return
		}
	}
}

// nextDelay is the wait before the next session: the reconnect schedule's
// (the configured delay after a healthy session, doubled for each
// consecutive failed one up to a low ceiling, jittered), or the permanent
// schedule's when the stream could not open for a reason waiting does not
// fix (messaging.IsPermanent: a missing queue, refused access), which an
// operator has to act on.
func (r *runner) nextDelay(healthy bool, err error) time.Duration {
	if healthy {
		r.failures = 0
	}
	schedule := r.subscription.reconnectSchedule()
	if messaging.IsPermanent(err) {
		schedule = r.subscription.permanentSchedule()
	}
	delay := schedule.Delay(r.failures+1, nil)
	if !healthy {
		r.failures++
	}
	return delay
}

// session opens the connection, reader and stream, runs the workers until the
// session ends, and reports whether it was healthy (it acknowledged something
// or lasted long enough), or why it could not open.
func (r *runner) session() (bool, error) {
	queue := r.subscription.queue
	connection, err := r.connector.Connect(r.soft)
	if err != nil {
		return false, r.openFailed("Unable to open connection for stream [%s] [%v]", fmt.Errorf("open connection: %w", err))
	}
	defer func() { _ = connection.Close() }()

	reader, err := connection.Reader(r.soft)
	if err != nil {
		return false, r.openFailed("Unable to open reader for stream [%s] [%v]", fmt.Errorf("open reader: %w", err))
	}
	defer func() { _ = reader.Close() }()

	stream, err := reader.Stream(r.soft, r.subscription.streamConfig())
	if err != nil {
		return false, r.openFailed("Unable to open stream [%s] [%v]", fmt.Errorf("open stream: %w", err))
	}
	r.declareRungs(connection)
	r.monitor.StreamOpened(queue, nil)
	r.firstOpen(nil)
	started := time.Now()
	acknowledged := newSession(r, stream).run()
	r.monitor.StreamClosed(queue)
	return acknowledged || time.Since(started) >= healthySession, nil
}

// declareRungs declares the retry rungs of the subscription's retry policy
// and the queue's acemq.retry binding as the consumer starts, not on the
// first retry, when the subscription establishes its topology. A failure is
// logged, not fatal: the settlement declares a rung again when it first
// needs it, and says so if it still cannot.
func (r *runner) declareRungs(connection messaging.Connection) {
	if !r.subscription.establishTopology {
		return
	}
	queue := r.subscription.queue
	rungs, err := deadletter.DeclareRungs(r.soft, connection, queue, r.settlement...)
	if err != nil {
		if r.soft.Err() == nil {
			r.logger.Warn(fmt.Sprintf("Unable to declare the retry rungs of stream [%s] [%v]; they will be declared on the first retry.", queue, err),
				slog.String("stream", queue), slog.Any("error", err))
		}
		return
	}
	if len(rungs) > 0 {
		r.logger.Debug(fmt.Sprintf("Declared [%d] retry rung(s) of stream [%s].", len(rungs), queue),
			slog.String("stream", queue), slog.Int("rungs", len(rungs)))
	}
}

// openFailed reports a failure to open the stream, and returns it.
func (r *runner) openFailed(format string, err error) error {
	queue := r.subscription.queue
	r.monitor.StreamOpened(queue, err)
	r.firstOpen(fmt.Errorf("streaming: stream %q: %w", queue, err))
	if r.soft.Err() != nil {
		return err // shutting down: the failure is the shutdown's
	}
	r.logger.Warn(fmt.Sprintf(format, queue, err), slog.String("stream", queue), slog.Any("error", err))
	return err
}
