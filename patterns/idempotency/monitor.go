package idempotency

// Store operations reported to Monitor.StoreFailed.
const (
	OperationClaim   = "claim"
	OperationConfirm = "confirm"
	OperationRelease = "release"
)

// Monitor receives one call per delivery and outcome; queue is the delivery's
// source queue.
type Monitor interface {
	// Claimed: the key was claimed and the handler runs.
	Claimed(queue string)
	// Duplicate: the key was confirmed; the message was accepted unhandled.
	Duplicate(queue string)
	// InProgress: the key is held; the message was put back after the delay.
	InProgress(queue string)
	// Released: the handler failed (or settled the message otherwise than by
	// accepting it), and its claim was forgotten so a retry runs.
	Released(queue string)
	// StoreFailed: a store call failed; operation is one of the Operation
	// constants.
	StoreFailed(queue, operation string, err error)
}

// NopMonitor ignores every event; embed it to implement only the callbacks you
// need.
type NopMonitor struct{}

func (NopMonitor) Claimed(string)                    {}
func (NopMonitor) Duplicate(string)                  {}
func (NopMonitor) InProgress(string)                 {}
func (NopMonitor) Released(string)                   {}
func (NopMonitor) StoreFailed(string, string, error) {}
