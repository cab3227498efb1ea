package prometheus

import (
	"time"

	"github.com/warrenmq/messaging/patterns/request"
)

// Request returns the request.Monitor: request_total and request_seconds
// {routing_key,outcome} for the requester (outcome answered, timed_out,
// failed), request_replies_dropped_total{routing_key} for late, unmatched
// or refused replies, and request_replies_total and request_unanswerable_total{stream}
// for the responder. Routing keys map onto the stream label values given to
// New (a request to the default exchange is routed by its queue's name).
func (m *Metrics) Request() request.Monitor { return requestMonitor{m} }

type requestMonitor struct{ m *Metrics }

func (r requestMonitor) RequestCompleted(routingKey, outcome string, elapsed time.Duration) {
	key := r.m.stream(routingKey)
	r.m.requests.WithLabelValues(key, outcome).Inc()
	r.m.requestSeconds.WithLabelValues(key, outcome).Observe(elapsed.Seconds())
}

func (r requestMonitor) ReplyDropped(routingKey string) {
	r.m.repliesDropped.WithLabelValues(r.m.stream(routingKey)).Inc()
}

// ReplyRefused counts a reply that failed the causation check among the
// dropped ones.
func (r requestMonitor) ReplyRefused(routingKey string) { r.ReplyDropped(routingKey) }

func (r requestMonitor) Answered(queue string) {
	r.m.replies.WithLabelValues(r.m.stream(queue)).Inc()
}

func (r requestMonitor) Unanswerable(queue string) {
	r.m.unanswerable.WithLabelValues(r.m.stream(queue)).Inc()
}
