package streams

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/warrenmq/messaging"
)

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

// fakeSettler records what it was asked to settle.
type fakeSettler struct {
	mu        sync.Mutex
	settled   []messaging.Decision
	err       error
	decisions map[string]messaging.Decision
}

func newFakeSettler() *fakeSettler { return &fakeSettler{decisions: map[string]messaging.Decision{}} }

func (s *fakeSettler) Settle(_ context.Context, d messaging.Delivery, decision messaging.Decision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.settled = append(s.settled, decision)
	s.decisions[d.MessageID] = decision
	return nil
}

func (s *fakeSettler) Decided(d messaging.Delivery) (messaging.Decision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	decision, ok := s.decisions[d.MessageID]
	return decision, ok
}

// plainConnection is a Connection with no capabilities.
type plainConnection struct{ messaging.Connection }

// fakeConnector hands out fakeConnections; it answers no capability itself.
type fakeConnector struct {
	conn *fakeConnection
}

func (c *fakeConnector) Connect(context.Context) (messaging.Connection, error) { return c.conn, nil }
func (c *fakeConnector) Close() error                                          { return nil }

// fakeConnection answers SupportsStreams and opens fakeReaders.
type fakeConnection struct {
	messaging.Connection
	supports bool
	reader   *fakeReader
	closed   atomic.Int64
}

func (c *fakeConnection) SupportsStreams() bool { return c.supports }
func (c *fakeConnection) Close() error          { c.closed.Add(1); return nil }
func (c *fakeConnection) Reader(context.Context) (messaging.Reader, error) {
	return c.reader, nil
}

// wrappingConnection decorates a Connection the conventional way.
type wrappingConnection struct{ messaging.Connection }

func (c wrappingConnection) Unwrap() messaging.Connection { return c.Connection }

// fakeReader records every StreamConfig and returns fakeStreams.
type fakeReader struct {
	messaging.Reader
	configs []messaging.StreamConfig
	stream  *fakeStream
}

func (r *fakeReader) Stream(_ context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	r.configs = append(r.configs, config)
	return r.stream, nil
}

// fakeStream delivers the queued deliveries and records acknowledgements.
type fakeStream struct {
	messaging.Stream
	queue  []messaging.Delivery
	acked  []uint64
	ackErr error
}

func (s *fakeStream) Read(_ context.Context, d *messaging.Delivery) error {
	*d, s.queue = s.queue[0], s.queue[1:]
	return nil
}

func (s *fakeStream) Acknowledge(_ context.Context, deliveries ...messaging.Delivery) error {
	if s.ackErr != nil {
		return s.ackErr
	}
	for _, d := range deliveries {
		s.acked = append(s.acked, d.DeliveryID)
	}
	return nil
}

func at(id string, offset any) messaging.Delivery {
	return messaging.Delivery{MessageID: id, SourceQueue: "orders.log", Headers: map[string]any{OffsetArgument: offset}}
}
