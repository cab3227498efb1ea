package deadletter

// Actions reported to Monitor.Settled.
const (
	// ActionAccepted: the inner handler returned normally; the delivery is
	// acknowledged.
	ActionAccepted = "accepted"
	// ActionRetried: republished to its queue with x-acemq-attempt+1 (or to a
	// retry rung that returns it there).
	ActionRetried = "retried"
	// ActionDeadLettered: republished to {queue}.dlq.
	ActionDeadLettered = "dead_lettered"
	// ActionParked: republished to {queue}.parked.
	ActionParked = "parked"
	// ActionInProgress: republished to its queue with the attempt unchanged.
	ActionInProgress = "in_progress"
	// ActionSetAsideFailed: a republish failed; the delivery is not
	// acknowledged and the broker redelivers it.
	ActionSetAsideFailed = "set_aside_failed"
	// ActionHeldForOutage: the failure was a dependency's (messaging.IsOutage,
	// or every message of a batch failing alone the same way); nothing is set
	// aside, the delivery is not acknowledged and the broker redelivers it.
	ActionHeldForOutage = "held_for_outage"
	// ActionRungMissing: a wait the policy holds in the broker could not use
	// its retry rung (the connection cannot declare one, or the declaration
	// or the publish to it failed); reason is why. It is reported beside the
	// delivery's own outcome: retried (waited in the process, within the
	// broker-wait threshold) or set_aside_failed (a longer wait).
	ActionRungMissing = "rung_missing"
)

// Monitor receives one Settled call per delivery and decision: queue is the
// source queue, action one of the Action constants, reason the text written to
// x-acemq-error (empty for accepted, retried and in-progress; for
// set_aside_failed it is the publish error; for held_for_outage the outage).
type Monitor interface {
	Settled(queue, action, reason string)
}

// NopMonitor ignores every event; embed it to implement only the callbacks you
// need.
type NopMonitor struct{}

func (NopMonitor) Settled(string, string, string) {}
