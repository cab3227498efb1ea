package prometheus

import "github.com/warrenmq/messaging/patterns/saga"

// Saga returns the saga.Monitor: saga_runs_total{saga,outcome} (completed,
// compensated, unresolved) and saga_undo_failures_total{saga,step}, the
// counter to alert on.
func (m *Metrics) Saga() saga.Monitor { return sagaMonitor{m} }

type sagaMonitor struct{ m *Metrics }

func (s sagaMonitor) Finished(name string, outcome saga.Outcome) {
	s.m.sagaRuns.WithLabelValues(name, outcome.String()).Inc()
}

func (s sagaMonitor) UndoFailed(name, step string, _ error) {
	s.m.sagaUndoFailures.WithLabelValues(name, step).Inc()
}
