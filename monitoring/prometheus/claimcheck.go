package prometheus

import "github.com/warrenmq/messaging/patterns/claimcheck"

// ClaimCheck returns the claimcheck.Monitor: claimcheck_total{event} (inlined,
// offloaded, fetched, missing) and claimcheck_store_errors_total{operation}
// (put, get).
func (m *Metrics) ClaimCheck() claimcheck.Monitor { return claimCheckMonitor{m} }

type claimCheckMonitor struct{ m *Metrics }

func (c claimCheckMonitor) Inlined(int)   { c.m.claimCheck.WithLabelValues("inlined").Inc() }
func (c claimCheckMonitor) Offloaded(int) { c.m.claimCheck.WithLabelValues("offloaded").Inc() }
func (c claimCheckMonitor) Fetched(int)   { c.m.claimCheck.WithLabelValues("fetched").Inc() }
func (c claimCheckMonitor) Missing()      { c.m.claimCheck.WithLabelValues("missing").Inc() }
func (c claimCheckMonitor) StoreFailed(operation string, _ error) {
	c.m.claimCheckErrors.WithLabelValues(operation).Inc()
}
