package deadletter

import "time"

// WithSleeper and ReceiveWithin let the external tests (the ones that run
// streaming, which imports this package) use the internal seams.
var WithSleeper = withSleeper

// ReceiveWithin is receiveWithin for a channel of struct{}.
func ReceiveWithin(t interface {
	Helper()
	Fatalf(format string, args ...any)
}, ch <-chan struct{}, within time.Duration, what string) {
	t.Helper()
	receiveWithin(t, ch, within, what)
}
