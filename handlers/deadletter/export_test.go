package deadletter

import "time"

// ReceiveWithin is receiveWithin for a channel of struct{}, for the external
// tests (the ones that run streaming, which imports this package).
func ReceiveWithin(t interface {
	Helper()
	Fatalf(format string, args ...any)
}, ch <-chan struct{}, within time.Duration, what string) {
	t.Helper()
	receiveWithin(t, ch, within, what)
}
