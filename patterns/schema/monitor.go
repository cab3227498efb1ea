package schema

// Monitor receives one call per registration and per lookup that found
// nothing.
type Monitor interface {
	// Registered: subject's definition is version; created is false when the
	// definition was already registered (a service registering on start-up).
	Registered(subject string, version int, created bool)
	// NotFound: a lookup of subject found nothing (subject is empty for a
	// lookup by id).
	NotFound(subject string)
}

// NopMonitor ignores every event; embed it to implement only the callbacks
// you need.
type NopMonitor struct{}

func (NopMonitor) Registered(string, int, bool) {}
func (NopMonitor) NotFound(string)              {}
