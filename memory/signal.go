package memory

// signal wakes whoever waits for the next change of what it belongs to: waiter
// returns a channel that the next notify closes. Like the state it signals, it
// is guarded by the broker's lock; the zero value is ready to use.
type signal struct {
	wake chan struct{}
}

// waiter returns a channel closed at the next notify.
func (s *signal) waiter() <-chan struct{} {
	if s.wake == nil {
		s.wake = make(chan struct{})
	}
	return s.wake
}

// notify wakes every waiter; one that comes later waits for the next notify.
func (s *signal) notify() {
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}
