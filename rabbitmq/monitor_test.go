package rabbitmq_test

import "sync/atomic"

type countingMonitor struct {
	opened, openFailed, closed, blocked, unblocked, published, committed, rolledBack atomic.Int64
}

func (m *countingMonitor) ConnectionOpened(err error) {
	if err != nil {
		m.openFailed.Add(1)
		return
	}
	m.opened.Add(1)
}
func (m *countingMonitor) ConnectionClosed()           { m.closed.Add(1) }
func (m *countingMonitor) ConnectionBlocked(string)    { m.blocked.Add(1) }
func (m *countingMonitor) ConnectionUnblocked()        { m.unblocked.Add(1) }
func (m *countingMonitor) DispatchPublished()          { m.published.Add(1) }
func (m *countingMonitor) TransactionCommitted(error)  { m.committed.Add(1) }
func (m *countingMonitor) TransactionRolledBack(error) { m.rolledBack.Add(1) }
