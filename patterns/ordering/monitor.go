package ordering

import "time"

// Monitor receives the waits ordering imposes; queue is the delivery's source
// queue.
type Monitor interface {
	// Waited: a message waited behind another one with the same key for
	// waited before it ran (only reported when it had to wait).
	Waited(queue string, waited time.Duration)
	// GapSkipped: a message stopped waiting for earlier deliveries of its
	// stream that did not reach ordering within the arrival window (they were
	// set aside before it, filtered, or handled by another instance) and ran.
	GapSkipped(queue string)
}

// NopMonitor ignores every event; embed it to implement only the callbacks you
// need.
type NopMonitor struct{}

func (NopMonitor) Waited(string, time.Duration) {}
func (NopMonitor) GapSkipped(string)            {}
