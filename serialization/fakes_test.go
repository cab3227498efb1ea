package serialization

import (
	"context"
	"log/slog"
	"sync"

	"github.com/warrenmq/messaging"
)

type orderPlaced struct {
	OrderID uint64
	Note    string
}

type orderShipped struct{ OrderID uint64 }

type fakeConnector struct {
	connectErr error
	connection *fakeConnection
	closed     int
}

func newFakeConnector() *fakeConnector {
	return &fakeConnector{connection: &fakeConnection{
		reader:       &fakeReader{stream: &fakeStream{}},
		writer:       &fakeWriter{},
		commitWriter: &fakeCommitWriter{},
	}}
}

func (c *fakeConnector) Connect(context.Context) (messaging.Connection, error) {
	if c.connectErr != nil {
		return nil, c.connectErr
	}
	return c.connection, nil
}

func (c *fakeConnector) Close() error { c.closed++; return nil }

type fakeConnection struct {
	reader          *fakeReader
	writer          *fakeWriter
	commitWriter    *fakeCommitWriter
	err             error
	commitWriterCtx context.Context
	closed          int
}

func (c *fakeConnection) Reader(context.Context) (messaging.Reader, error) {
	if c.err != nil {
		return nil, c.err
	}
	return c.reader, nil
}

func (c *fakeConnection) Writer(context.Context) (messaging.Writer, error) {
	if c.err != nil {
		return nil, c.err
	}
	return c.writer, nil
}

func (c *fakeConnection) CommitWriter(ctx context.Context) (messaging.CommitWriter, error) {
	c.commitWriterCtx = ctx
	if c.err != nil {
		return nil, c.err
	}
	return c.commitWriter, nil
}

func (c *fakeConnection) Close() error { c.closed++; return nil }

type fakeReader struct {
	stream *fakeStream
	config messaging.StreamConfig
	err    error
	closed int
}

func (r *fakeReader) Stream(_ context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	r.config = config
	if r.err != nil {
		return nil, r.err
	}
	return r.stream, nil
}

func (r *fakeReader) Close() error { r.closed++; return nil }

// fakeStream returns its queued deliveries one per Read, overwriting the whole
// delivery the way a transport does.
type fakeStream struct {
	mu           sync.Mutex
	deliveries   []messaging.Delivery
	err          error
	acknowledged []messaging.Delivery
	closed       int
}

func (s *fakeStream) Read(_ context.Context, delivery *messaging.Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	*delivery = s.deliveries[0]
	s.deliveries = s.deliveries[1:]
	return nil
}

func (s *fakeStream) Acknowledge(_ context.Context, deliveries ...messaging.Delivery) error {
	s.acknowledged = append(s.acknowledged, deliveries...)
	return nil
}

func (s *fakeStream) Close() error { s.closed++; return nil }

type fakeWriter struct {
	written []messaging.Dispatch
	calls   int
	closed  int
}

func (w *fakeWriter) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	w.calls++
	w.written = append(w.written, dispatches...)
	return len(dispatches), nil
}

func (w *fakeWriter) Close() error { w.closed++; return nil }

type fakeCommitWriter struct {
	fakeWriter
	commits   int
	rollbacks int
}

func (w *fakeCommitWriter) Commit() error   { w.commits++; return nil }
func (w *fakeCommitWriter) Rollback() error { w.rollbacks++; return nil }

type fakeMonitor struct {
	encoded []error
	decoded []error
}

func (m *fakeMonitor) MessageEncoded(err error) { m.encoded = append(m.encoded, err) }
func (m *fakeMonitor) MessageDecoded(err error) { m.decoded = append(m.decoded, err) }

type upperSerializer struct{}

func (upperSerializer) ContentType() string { return "text/x-upper" }
func (upperSerializer) Serialize(message any) ([]byte, error) {
	return []byte("UPPER"), nil
}
func (upperSerializer) Deserialize(payload []byte, target any) error {
	if string(payload) != "UPPER" {
		return errUpper
	}
	target.(*orderShipped).OrderID = 99
	return nil
}

type panickingCodec struct{}

func (panickingCodec) ContentType() string               { return "application/x-panic" }
func (panickingCodec) Serialize(any) ([]byte, error)     { panic("serializer bug") }
func (panickingCodec) Deserialize(_ []byte, _ any) error { panic("deserializer bug") }

var discardLogger = slog.New(slog.DiscardHandler)
