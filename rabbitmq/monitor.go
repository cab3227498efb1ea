package rabbitmq

// Monitor receives the transport's events; wire it to metrics (see the
// monitoring package). Implementations must be cheap and safe for concurrent use:
// DispatchPublished fires on the hot path.
type Monitor interface {
	// ConnectionOpened fires after every dial, with its error (nil when open).
	ConnectionOpened(err error)
	// ConnectionClosed fires once for every connection that closes, whoever
	// closed it; the log line carries the broker's reason.
	ConnectionClosed()
	// ConnectionBlocked fires when the broker blocks the connection (a memory or
	// disk alarm); publishing fails at once until ConnectionUnblocked.
	ConnectionBlocked(reason string)
	// ConnectionUnblocked fires when the broker lifts the block.
	ConnectionUnblocked()
	// DispatchPublished fires for every message written to the broker.
	DispatchPublished()
	// TransactionCommitted fires after every CommitWriter.Commit with its result;
	// errors.Is(err, ErrCommitTimeout) tells a timeout from other failures.
	TransactionCommitted(err error)
	// TransactionRolledBack fires after every CommitWriter.Rollback.
	TransactionRolledBack(err error)
}

// NopMonitor is the default Monitor: every callback does nothing. Embed it to
// implement only the callbacks you need.
type NopMonitor struct{}

// ConnectionOpened does nothing.
func (NopMonitor) ConnectionOpened(error) {}

// ConnectionClosed does nothing.
func (NopMonitor) ConnectionClosed() {}

// ConnectionBlocked does nothing.
func (NopMonitor) ConnectionBlocked(string) {}

// ConnectionUnblocked does nothing.
func (NopMonitor) ConnectionUnblocked() {}

// DispatchPublished does nothing.
func (NopMonitor) DispatchPublished() {}

// TransactionCommitted does nothing.
func (NopMonitor) TransactionCommitted(error) {}

// TransactionRolledBack does nothing.
func (NopMonitor) TransactionRolledBack(error) {}
