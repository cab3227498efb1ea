package retry

// Monitor receives one callback per attempt to handle a batch.
type Monitor interface {
	// HandleAttempted reports attempt (1 for the first) and its result: nil on
	// success, otherwise the recovered panic value.
	HandleAttempted(attempt int, result any)
}

// NopMonitor is a Monitor that does nothing; embed it to implement only some
// callbacks of a future, larger Monitor.
type NopMonitor struct{}

// HandleAttempted does nothing.
func (NopMonitor) HandleAttempted(int, any) {}
