package rabbitmq

import "sync"

// markClosed sets *closed under mu and reports whether this call set it: the
// first Close of a connection, reader, stream, writer or handle does the
// closing, and every later one returns nil at once. What a Close must take
// from the closed value it takes under mu afterwards: nothing is added to a
// value once it is marked closed.
func markClosed(mu *sync.Mutex, closed *bool) bool {
	mu.Lock()
	defer mu.Unlock()
	if *closed {
		return false
	}
	*closed = true
	return true
}
