package streams

import "sync/atomic"

type countingMonitor struct {
	refused atomic.Int64
	resumed atomic.Int64
	last    atomic.Uint64
}

func (m *countingMonitor) RetryRefused(string) { m.refused.Add(1) }
func (m *countingMonitor) Resumed(_ string, offset uint64) {
	m.resumed.Add(1)
	m.last.Store(offset)
}
