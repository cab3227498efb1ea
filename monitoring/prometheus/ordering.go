package prometheus

import (
	"time"

	"github.com/warrenmq/messaging/patterns/ordering"
)

// Ordering returns the ordering.Monitor: ordering_waits_total{stream},
// ordering_wait_seconds{stream} and ordering_gaps_skipped_total{stream}.
func (m *Metrics) Ordering() ordering.Monitor { return orderingMonitor{m} }

type orderingMonitor struct{ m *Metrics }

func (o orderingMonitor) Waited(queue string, waited time.Duration) {
	stream := o.m.stream(queue)
	o.m.orderingWaits.WithLabelValues(stream).Inc()
	o.m.orderingWaitSeconds.WithLabelValues(stream).Observe(waited.Seconds())
}

func (o orderingMonitor) GapSkipped(queue string) {
	o.m.orderingGaps.WithLabelValues(o.m.stream(queue)).Inc()
}
