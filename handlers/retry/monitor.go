package retry

import "time"

// Monitor receives one callback per attempt to handle a batch, and one pair
// per outage the batch waited through.
type Monitor interface {
	// HandleAttempted reports attempt (1 for the first) and its result: nil on
	// success, otherwise the recovered panic value. A try that failed because
	// of an outage is not an attempt and is not reported here.
	HandleAttempted(attempt int, result any)
	// OutageStarted reports that the batch failed because a dependency is
	// down (messaging.IsOutage(cause)) and is now held, without counting
	// attempts, until the dependency answers.
	OutageStarted(cause error)
	// OutageEnded reports that the batch no longer waits, after waited: the
	// dependency answered, the failure became the message's own, or the
	// context ended.
	OutageEnded(waited time.Duration)
}

// NopMonitor is a Monitor that does nothing; embed it to implement only some
// callbacks.
type NopMonitor struct{}

// HandleAttempted does nothing.
func (NopMonitor) HandleAttempted(int, any) {}

// OutageStarted does nothing.
func (NopMonitor) OutageStarted(error) {}

// OutageEnded does nothing.
func (NopMonitor) OutageEnded(time.Duration) {}

// StreamMonitor is a Monitor that also hears which stream each attempt's batch
// came from, so that its metrics can be labelled per stream. The decorator
// looks for it on the Monitor it is given: one that has it hears every attempt
// through HandleAttemptedOn and not through HandleAttempted, so an attempt is
// reported once; a Monitor without it keeps working as it is.
type StreamMonitor interface {
	Monitor
	// HandleAttemptedOn is HandleAttempted with stream: the source queue of
	// the batch's deliveries (messaging.DeliveriesFrom; the streaming runtime
	// puts them in the context), or "" when the context carries none.
	HandleAttemptedOn(stream string, attempt int, result any)
}
