package prometheus

import "github.com/warrenmq/messaging/patterns/idempotency"

// Idempotency returns the idempotency.Monitor: idempotency_total{stream,outcome}
// and idempotency_store_errors_total{stream,operation}.
func (m *Metrics) Idempotency() idempotency.Monitor { return idempotencyMonitor{m} }

type idempotencyMonitor struct{ m *Metrics }

func (i idempotencyMonitor) Claimed(queue string)    { i.outcome(queue, "claimed") }
func (i idempotencyMonitor) Duplicate(queue string)  { i.outcome(queue, "duplicate") }
func (i idempotencyMonitor) InProgress(queue string) { i.outcome(queue, "in_progress") }
func (i idempotencyMonitor) Released(queue string)   { i.outcome(queue, "released") }
func (i idempotencyMonitor) ClaimLost(queue string)  { i.outcome(queue, "claim_lost") }
func (i idempotencyMonitor) StoreFailed(queue, operation string, _ error) {
	i.m.idempotencyErrors.WithLabelValues(i.m.stream(queue), operation).Inc()
}

func (i idempotencyMonitor) outcome(queue, outcome string) {
	i.m.idempotency.WithLabelValues(i.m.stream(queue), outcome).Inc()
}
