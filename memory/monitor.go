package memory

// Monitor receives the in-memory broker's events. The broker calls it after
// releasing its lock, so an implementation may call back into the broker. Keep
// implementations cheap: they run on the publishing or consuming goroutine.
type Monitor interface {
	// MessagePublished reports a publish to exchange with key that reached
	// queues queues (0 when it was unroutable).
	MessagePublished(exchange, key string, queues int)
	// MessageDelivered reports a delivery handed to a stream or to Pull.
	MessageDelivered(queue string)
	// MessagesAcknowledged reports count deliveries acknowledged on a stream.
	MessagesAcknowledged(queue string, count int)
	// MessagesRequeued reports count unacknowledged deliveries returned to the
	// front of queue because their stream or connection closed.
	MessagesRequeued(queue string, count int)
	// MessageExpired reports a message whose TTL ran out in queue.
	MessageExpired(queue string)
}

type nopMonitor struct{}

func (nopMonitor) MessagePublished(string, string, int) {}
func (nopMonitor) MessageDelivered(string)              {}
func (nopMonitor) MessagesAcknowledged(string, int)     {}
func (nopMonitor) MessagesRequeued(string, int)         {}
func (nopMonitor) MessageExpired(string)                {}
