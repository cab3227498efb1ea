package idempotency

// Store operations reported to Monitor.StoreFailed.
const (
	OperationClaim   = "claim"
	OperationConfirm = "confirm"
	OperationRelease = "release"
	OperationRenew   = "renew"
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
	// ClaimLost: the store refused a renewal or the Confirm because the
	// claim was no longer this delivery's: its lease ended and another
	// delivery of the message took the key, so the work may run twice.
	ClaimLost(queue string)
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
func (NopMonitor) ClaimLost(string)                  {}
func (NopMonitor) StoreFailed(string, string, error) {}
