package otel

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/warrenmq/messaging"
)

// recorder is an SDK tracer provider that keeps every ended span in memory.
type recorder struct {
	provider *trace.TracerProvider
	exporter *tracetest.InMemoryExporter
	// ended is told each time a span has ended and been exported.
	ended endings
}

func newRecorder() recorder {
	exporter := tracetest.NewInMemoryExporter()
	ended := make(endings, 1)
	provider := trace.NewTracerProvider(trace.WithSyncer(exporter), trace.WithSpanProcessor(ended), trace.WithSampler(trace.AlwaysSample()))
	return recorder{provider: provider, exporter: exporter, ended: ended}
}

// endings is a span processor that says, on itself, that a span ended; it runs
// after the exporter's, so the span is exported by then.
type endings chan struct{}

func (e endings) OnStart(context.Context, trace.ReadWriteSpan) {}
func (e endings) OnEnd(trace.ReadOnlySpan) {
	select {
	case e <- struct{}{}:
	default: // a signal is already waiting
	}
}
func (e endings) Shutdown(context.Context) error   { return nil }
func (e endings) ForceFlush(context.Context) error { return nil }

func (r recorder) spans() tracetest.SpanStubs { return r.exporter.GetSpans() }

// named returns the ended spans called name.
func (r recorder) named(name string) []tracetest.SpanStub {
	var found []tracetest.SpanStub
	for _, span := range r.spans() {
		if span.Name == name {
			found = append(found, span)
		}
	}
	return found
}

// fakeConnector records what its writers were given and answers with n and err.
type fakeConnector struct {
	mu      sync.Mutex
	written []messaging.Dispatch
	n       func(count int) int
	err     error
}

func (c *fakeConnector) Connect(context.Context) (messaging.Connection, error) {
	return fakeConnection{c}, nil
}
func (c *fakeConnector) Close() error { return nil }

type fakeConnection struct{ c *fakeConnector }

func (f fakeConnection) Reader(context.Context) (messaging.Reader, error) { return nil, nil }
func (f fakeConnection) Writer(context.Context) (messaging.Writer, error) {
	return &fakeWriter{c: f.c}, nil
}
func (f fakeConnection) CommitWriter(context.Context) (messaging.CommitWriter, error) {
	return &fakeWriter{c: f.c}, nil
}
func (f fakeConnection) Close() error { return nil }

type fakeWriter struct{ c *fakeConnector }

func (w *fakeWriter) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.c.written = append(w.c.written, dispatches...)
	if w.c.n != nil {
		return w.c.n(len(dispatches)), w.c.err
	}
	return len(dispatches), w.c.err
}
func (w *fakeWriter) Commit() error   { return nil }
func (w *fakeWriter) Rollback() error { return nil }
func (w *fakeWriter) Close() error    { return nil }

// fakeSettler records a decision per message id.
type fakeSettler struct {
	mu        sync.Mutex
	decisions map[string]messaging.Decision
}

func newFakeSettler() *fakeSettler {
	return &fakeSettler{decisions: map[string]messaging.Decision{}}
}

func (s *fakeSettler) Settle(_ context.Context, delivery messaging.Delivery, decision messaging.Decision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decisions[delivery.MessageID] = decision
	return nil
}

func (s *fakeSettler) Decided(delivery messaging.Delivery) (messaging.Decision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	decision, ok := s.decisions[delivery.MessageID]
	return decision, ok
}
