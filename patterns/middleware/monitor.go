package middleware

// Monitor receives one call per delivery Timeout or Recovery settled; queue is
// the delivery's source queue.
type Monitor interface {
	// TimedOut: the handler outlived Timeout's bound; the delivery was
	// retried.
	TimedOut(queue string)
	// Recovered: the handler panicked; Recovery dead-lettered the delivery.
	Recovered(queue string)
}

// NopMonitor ignores every event; embed it to implement only the callbacks you
// need.
type NopMonitor struct{}

func (NopMonitor) TimedOut(string)  {}
func (NopMonitor) Recovered(string) {}
