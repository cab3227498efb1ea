package prometheus

import "github.com/warrenmq/messaging/patterns/schedule"

// Schedule returns the schedule.Monitor: schedule_events_total{event}
// (scheduled, delivered, undelivered, rung_missing, set_aside) and
// schedule_hops_total{rung}. Hops climbing while delivered stands still, and
// undelivered climbing, is a destination nothing is bound to.
func (m *Metrics) Schedule() schedule.Monitor { return scheduleMonitor{m} }

type scheduleMonitor struct{ m *Metrics }

func (s scheduleMonitor) Scheduled()                 { s.event("scheduled") }
func (s scheduleMonitor) Delivered()                 { s.event("delivered") }
func (s scheduleMonitor) Undelivered(string, string) { s.event("undelivered") }
func (s scheduleMonitor) RungMissing(string)         { s.event("rung_missing") }
func (s scheduleMonitor) SetAside(error)             { s.event("set_aside") }
func (s scheduleMonitor) Hopped(rung string)         { s.m.scheduleHops.WithLabelValues(rung).Inc() }

func (s scheduleMonitor) event(event string) { s.m.scheduleEvents.WithLabelValues(event).Inc() }
