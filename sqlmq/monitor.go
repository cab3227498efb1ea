package sqlmq

import "time"

// Monitor receives the outbox's counters. Wire it to metrics: stored minus
// confirmed is the number of committed messages the broker has not yet taken.
type Monitor interface {
	// MessageStored reports rows inserted by a committed SQL transaction.
	MessageStored(count int)
	// MessagePublished reports messages handed to the transport (retries included).
	MessagePublished(count int)
	// MessageConfirmed reports rows the broker confirmed and the processor
	// marked dispatched.
	MessageConfirmed(count int)
	// MessageRetired reports rows retired: their retry policy gave up on them, or they can never be published.
	MessageRetired(count int)
	// DispatchLag reports, for each confirmed row, the time from its commit to
	// the broker's confirmation.
	DispatchLag(lag time.Duration)
	// CommitInDoubt reports a COMMIT that lost its connection, and what
	// asking the database on a new connection found: stored or not, or err
	// when it could not be asked (then Commit returned ErrCommitUnknown).
	CommitInDoubt(stored bool, err error)
}

// NopMonitor is the default Monitor; it discards everything.
type NopMonitor struct{}

// MessageStored does nothing.
func (NopMonitor) MessageStored(int) {}

// MessagePublished does nothing.
func (NopMonitor) MessagePublished(int) {}

// MessageConfirmed does nothing.
func (NopMonitor) MessageConfirmed(int) {}

// MessageRetired does nothing.
func (NopMonitor) MessageRetired(int) {}

// DispatchLag does nothing.
func (NopMonitor) DispatchLag(time.Duration) {}

// CommitInDoubt does nothing.
func (NopMonitor) CommitInDoubt(bool, error) {}
