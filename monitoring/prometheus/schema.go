package prometheus

import "github.com/warrenmq/messaging/patterns/schema"

// Schema returns the schema.Monitor: schema_registered_total{subject,result}
// (created, existing) and schema_not_found_total{subject} (subject empty for
// a lookup by id).
func (m *Metrics) Schema() schema.Monitor { return schemaMonitor{m} }

type schemaMonitor struct{ m *Metrics }

func (s schemaMonitor) Registered(subject string, _ int, created bool) {
	result := "existing"
	if created {
		result = "created"
	}
	s.m.schemaRegistered.WithLabelValues(subject, result).Inc()
}

func (s schemaMonitor) NotFound(subject string) {
	s.m.schemaNotFound.WithLabelValues(subject).Inc()
}
