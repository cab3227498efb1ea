package streams

// Monitor receives a stream reader's events; stream is the stream's name.
type Monitor interface {
	// RetryRefused: a handler asked for Retry or InProgress, and the message
	// was parked on {stream}.parked instead.
	RetryRefused(stream string)
	// Resumed: the reader was reattached after its connection or channel
	// dropped, at offset (the oldest handed over and not settled, or one past
	// the newest settled) instead of the stated offset.
	Resumed(stream string, offset uint64)
}

// NopMonitor ignores every event; embed it to implement only the callbacks
// you need.
type NopMonitor struct{}

func (NopMonitor) RetryRefused(string)    {}
func (NopMonitor) Resumed(string, uint64) {}
