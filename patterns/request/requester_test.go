package request

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
)

// recordingConnector hands out connections whose reader records the
// StreamConfig it is asked for and returns a stream that waits until it is
// closed; its writers accept everything.
type recordingConnector struct {
	mu      sync.Mutex
	configs []messaging.StreamConfig
}

func (c *recordingConnector) Connect(context.Context) (messaging.Connection, error) {
	return recordingConnection{c}, nil
}
func (c *recordingConnector) Close() error { return nil }

func (c *recordingConnector) streamConfigs() []messaging.StreamConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]messaging.StreamConfig(nil), c.configs...)
}

type recordingConnection struct{ connector *recordingConnector }

func (c recordingConnection) Reader(context.Context) (messaging.Reader, error) {
	return recordingReader(c), nil
}
func (recordingConnection) Writer(context.Context) (messaging.Writer, error) {
	return &fakeWriter{}, nil
}
func (recordingConnection) CommitWriter(context.Context) (messaging.CommitWriter, error) {
	return nil, errors.New("no commit writer here")
}
func (recordingConnection) Close() error { return nil }

type recordingReader struct{ connector *recordingConnector }

func (r recordingReader) Stream(_ context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	r.connector.mu.Lock()
	r.connector.configs = append(r.connector.configs, config)
	r.connector.mu.Unlock()
	return &waitingStream{closed: make(chan struct{})}, nil
}
func (recordingReader) Close() error { return nil }

// waitingStream has nothing to read until it is closed.
type waitingStream struct {
	once   sync.Once
	closed chan struct{}
}

func (s *waitingStream) Read(ctx context.Context, _ *messaging.Delivery) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closed:
		return messaging.ErrClosed
	}
}
func (s *waitingStream) Acknowledge(context.Context, ...messaging.Delivery) error { return nil }
func (s *waitingStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// TestReplyQueueDeclarations: the reply subscription declares a generated
// reply queue transient, exclusive, auto-delete and classic, without
// dead-letter queues; a named one durable and quorum, with no expiry.
func TestReplyQueueDeclarations(t *testing.T) {
	for _, c := range []struct {
		what    string
		options []Option
		check   func(messaging.Queue, messaging.StreamConfig) bool
	}{
		{what: "generated", check: func(q messaging.Queue, c messaging.StreamConfig) bool {
			return !q.Durable && q.Exclusive && q.AutoDelete && q.Type == messaging.QueueClassic && len(q.Arguments) == 0
		}},
		{what: "named", options: []Option{Options.ReplyTo("my-replies")}, check: func(q messaging.Queue, c messaging.StreamConfig) bool {
			return c.StreamName == "my-replies" && q.Durable && !q.Exclusive && !q.AutoDelete && q.Type == messaging.QueueQuorum && len(q.Arguments) == 0
		}},
	} {
		connector := &recordingConnector{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		requester, err := NewRequester[int, int](ctx, connector, "", "prices", append(c.options, Options.Logger(quiet))...)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		_ = requester.Close()
		configs := connector.streamConfigs()
		if len(configs) != 1 {
			t.Fatalf("%s: %d streams opened, want 1", c.what, len(configs))
		}
		queue, err := configs[0].SourceQueue()
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if !c.check(queue, configs[0]) || configs[0].DeadLetters || !configs[0].EstablishTopology || configs[0].StreamName != requester.ReplyQueue() {
			t.Errorf("%s reply queue declared as %+v from %+v", c.what, queue, configs[0])
		}
	}
}
