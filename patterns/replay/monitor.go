package replay

// Monitor receives one call per message moved or declined and one per pass;
// queue is the queue the pass read (From.Queue).
type Monitor interface {
	// Moved: a copy was confirmed and routed and the original acknowledged.
	Moved(queue string)
	// Declined: the filter declined a message; it is returned to its queue
	// when the pass ends.
	Declined(queue string)
	// Finished: the pass ended, with its result (Reason says why).
	Finished(queue string, result Result)
}

// NopMonitor ignores every event; embed it to implement only the callbacks you
// need.
type NopMonitor struct{}

func (NopMonitor) Moved(string)            {}
func (NopMonitor) Declined(string)         {}
func (NopMonitor) Finished(string, Result) {}
