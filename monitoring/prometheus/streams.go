package prometheus

import "github.com/warrenmq/messaging/patterns/streams"

// Streams returns the streams.Monitor: stream_retry_refused_total{stream}
// (a Retry or InProgress parked instead) and stream_resumed_total{stream}
// (a reader reattached after a drop where it left off).
func (m *Metrics) Streams() streams.Monitor { return streamsMonitor{m} }

type streamsMonitor struct{ m *Metrics }

func (s streamsMonitor) RetryRefused(stream string) {
	s.m.streamRetryRefused.WithLabelValues(s.m.stream(stream)).Inc()
}

func (s streamsMonitor) Resumed(stream string, _ uint64) {
	s.m.streamResumed.WithLabelValues(s.m.stream(stream)).Inc()
}
