package transactional

// Monitor receives one callback per step of each batch's transaction.
type Monitor interface {
	// TransactionStarted reports opening the batch's CommitWriter (connecting
	// first when needed); err is nil on success.
	TransactionStarted(err error)
	// TransactionCommitted reports the commit after the handler returned.
	TransactionCommitted(err error)
	// TransactionRolledBack reports a rollback after a failure.
	TransactionRolledBack(err error)
}

// NopMonitor is a Monitor that does nothing.
type NopMonitor struct{}

// TransactionStarted does nothing.
func (NopMonitor) TransactionStarted(error) {}

// TransactionCommitted does nothing.
func (NopMonitor) TransactionCommitted(error) {}

// TransactionRolledBack does nothing.
func (NopMonitor) TransactionRolledBack(error) {}
