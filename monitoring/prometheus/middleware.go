package prometheus

import "github.com/warrenmq/messaging/patterns/middleware"

// Middleware returns the middleware.Monitor (Timeout and Recovery):
// handler_timeouts_total{stream} and handler_panics_rejected_total{stream}.
func (m *Metrics) Middleware() middleware.Monitor { return middlewareMonitor{m} }

type middlewareMonitor struct{ m *Metrics }

func (w middlewareMonitor) TimedOut(queue string) {
	w.m.handlerTimeouts.WithLabelValues(w.m.stream(queue)).Inc()
}

func (w middlewareMonitor) Recovered(queue string) {
	w.m.handlerPanicsRejected.WithLabelValues(w.m.stream(queue)).Inc()
}
