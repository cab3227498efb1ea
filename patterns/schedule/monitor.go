package schedule

// Monitor receives the scheduler's events (default NopMonitor).
type Monitor interface {
	// Scheduled: At or In accepted a message.
	Scheduled()
	// Hopped: a message was put on a rung (rung is its name).
	Hopped(rung string)
	// Delivered: a due message reached a queue of its destination.
	Delivered()
	// Undelivered: a due message reached no queue (nothing is bound to its
	// destination yet, or its exchange is missing); it goes back through the
	// 10 s rung and is tried again.
	Undelivered(exchange, routingKey string)
	// RungMissing: a rung could not be published to (deleted); a shorter
	// one is tried.
	RungMissing(rung string)
	// SetAside: the control consumer set a message aside on
	// acemq.schedule.due.dlq (no rung would take it, or it was not a
	// scheduled message).
	SetAside(reason error)
}

// NopMonitor ignores every event; embed it to implement only the callbacks you
// need.
type NopMonitor struct{}

func (NopMonitor) Scheduled()                 {}
func (NopMonitor) Hopped(string)              {}
func (NopMonitor) Delivered()                 {}
func (NopMonitor) Undelivered(string, string) {}
func (NopMonitor) RungMissing(string)         {}
func (NopMonitor) SetAside(error)             {}
