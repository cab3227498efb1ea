package streaming

import "time"

// Monitor receives the runtime's events. Every callback carries the queue name
// given to NewSubscription so one monitor can label metrics per stream.
// BatchHandled and BatchAcknowledged fire once per batch on the hot path; keep
// them cheap.
type Monitor interface {
	// StreamOpened fires once per attempt to open a subscription's stream;
	// err == nil means the stream is live, otherwise it names the failing step.
	StreamOpened(stream string, err error)
	// StreamClosed fires once when a live session ends, for any reason.
	StreamClosed(stream string)
	// BatchHandled fires after Handle returns or panics; count is the number of
	// messages handed to the handler, duration includes inner retries.
	BatchHandled(stream string, count int, duration time.Duration)
	// BatchAcknowledged fires after each acknowledgement attempt; count is the
	// number of deliveries acknowledged (including filtered ones).
	BatchAcknowledged(stream string, count int, err error)
	// ShutdownForced fires when workers miss the shutdown timeout and in-flight
	// deliveries are abandoned.
	ShutdownForced(stream string)
	// OutageStarted fires when the subscription starts waiting on an outage:
	// a worker's handler (handlers/retry) holds its batch because a
	// dependency is down, or a handler panicked with a failure for which
	// messaging.IsOutage is true. Its messages stay unacknowledged; none is
	// dead-lettered. cause is the failure. Consumer.Waiting reports the same.
	OutageStarted(stream string, cause error)
	// OutageEnded fires when the subscription no longer waits (a batch was
	// handled, or shutdown began), after waited.
	OutageEnded(stream string, waited time.Duration)
	// DeliveriesRequeued fires when count deliveries of a batch whose
	// settlement could not be completed (a set-aside copy, a retry or an
	// in-progress republish that could not be published) were returned to
	// their queue alone, while the rest of the batch was acknowledged and
	// the session went on. The broker redelivers them.
	DeliveriesRequeued(stream string, count int)
}

// NopMonitor ignores every event; embed it to implement only the callbacks you
// need.
type NopMonitor struct{}

func (NopMonitor) StreamOpened(string, error)              {}
func (NopMonitor) StreamClosed(string)                     {}
func (NopMonitor) BatchHandled(string, int, time.Duration) {}
func (NopMonitor) BatchAcknowledged(string, int, error)    {}
func (NopMonitor) ShutdownForced(string)                   {}
func (NopMonitor) OutageStarted(string, error)             {}
func (NopMonitor) OutageEnded(string, time.Duration)       {}
func (NopMonitor) DeliveriesRequeued(string, int)          {}
