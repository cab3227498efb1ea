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
	// front of queue because their stream or connection closed, or because a
	// stream's Requeue returned one.
	MessagesRequeued(queue string, count int)
	// MessageExpired reports a message whose TTL ran out in queue.
	MessageExpired(queue string)
}

// NopMonitor ignores every event; embed it to implement only the callbacks you
// need.
type NopMonitor struct{}

func (NopMonitor) MessagePublished(string, string, int) {}
func (NopMonitor) MessageDelivered(string)              {}
func (NopMonitor) MessagesAcknowledged(string, int)     {}
func (NopMonitor) MessagesRequeued(string, int)         {}
func (NopMonitor) MessageExpired(string)                {}
