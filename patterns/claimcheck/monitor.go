package claimcheck

// Store operations reported to Monitor.StoreFailed.
const (
	OperationPut = "put"
	OperationGet = "get"
)

// Monitor receives one call per payload encoded or decoded by the codec.
type Monitor interface {
	// Inlined: a payload of size bytes travelled in the body.
	Inlined(size int)
	// Offloaded: a payload of size bytes was put in the store and the body
	// carries its key.
	Offloaded(size int)
	// Fetched: a claim check's payload of size bytes was read from the store.
	Fetched(size int)
	// Missing: a claim check's key is not in the store (or is not a key it
	// could hold); the message is parked.
	Missing()
	// StoreFailed: a store call failed; operation is OperationPut or
	// OperationGet. A failed get is retried through the retry policy.
	StoreFailed(operation string, err error)
}

// NopMonitor ignores every event; embed it to implement only the callbacks
// you need.
type NopMonitor struct{}

func (NopMonitor) Inlined(int)               {}
func (NopMonitor) Offloaded(int)             {}
func (NopMonitor) Fetched(int)               {}
func (NopMonitor) Missing()                  {}
func (NopMonitor) StoreFailed(string, error) {}
