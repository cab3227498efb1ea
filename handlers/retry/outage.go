package retry

import (
	"context"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wait"
)

// hold is one Handle's wait through an outage: it counts the consecutive
// outage failures, tells the monitor, the log and the runtime (through the
// context's outage listener) once when the wait starts and once when it ends.
type hold struct {
	handler *handler
	ctx     context.Context
	count   int
	tries   int
	since   time.Time
}

// wait records an outage failure and sleeps the capped backoff; it returns
// the context's error when the context ended first.
func (w *hold) wait(cause error) error {
	c := w.handler.config
	w.tries++
	delay := c.outageWait(w.tries)
	if w.tries == 1 {
		w.since = time.Now()
		c.monitor.OutageStarted(cause)
		c.logger.LogAttrs(w.ctx, slog.LevelWarn,
			"Handler is waiting on an outage; holding its messages and trying again, without counting attempts, until the dependency answers.",
			slog.Int("count", w.count), slog.Duration("wait", delay), slog.Any("error", cause))
	} else {
		c.logger.LogAttrs(w.ctx, slog.LevelDebug, "Handler is still waiting on an outage; trying again.",
			slog.Int("tries", w.tries), slog.Duration("wait", delay), slog.Any("error", cause))
	}
	messaging.OutageListenerFrom(w.ctx).Waiting(cause, delay)
	return wait.For(w.ctx, delay)
}

// end closes the wait, if one is open.
func (w *hold) end() {
	if w.tries == 0 {
		return
	}
	waited := time.Since(w.since)
	tries := w.tries
	w.tries = 0
	c := w.handler.config
	messaging.OutageListenerFrom(w.ctx).Resumed()
	c.monitor.OutageEnded(waited)
	c.logger.LogAttrs(w.ctx, slog.LevelInfo, "Handler stopped waiting on an outage.",
		slog.Duration("waited", waited), slog.Int("tries", tries))
}
