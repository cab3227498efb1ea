package group

// Monitor receives a group's start and stop.
type Monitor interface {
	// Started: every one of members opened its stream on queue.
	Started(queue string, members int)
	// StartFailed: a member did not start; the members that did were closed.
	StartFailed(queue string, err error)
	// MemberClosed: one member stopped (Close, or CloseMember); the broker
	// hands its unacknowledged deliveries to the others.
	MemberClosed(queue string)
}

// NopMonitor ignores every event; embed it to implement only the callbacks you
// need.
type NopMonitor struct{}

func (NopMonitor) Started(string, int)       {}
func (NopMonitor) StartFailed(string, error) {}
func (NopMonitor) MemberClosed(string)       {}
