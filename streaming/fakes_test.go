package streaming

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing/synctest"
	"time"

	"github.com/warrenmq/messaging"
)

// The fixture's tests run in testing/synctest bubbles: the runtime's timers
// (reconnect delays, the shutdown deadline and its grace) run on the bubble's
// clock, which moves only when every goroutine of the bubble is blocked, so a
// wait of minutes passes at once and every duration is exact.

type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// within bounds every wait of the fixture, on the bubble's clock: longer
// than any delay the runtime schedules, and free in real time.
const within = time.Hour

// eventually waits until every goroutine of the bubble is blocked (all that
// can happen without time passing has happened) and fails unless condition
// holds then.
func eventually(t fataler, condition func() bool) {
	t.Helper()
	synctest.Wait()
	if condition() {
		return
	}
	// Handled deliveries wait up to ackLinger for the next one before they
	// are acknowledged; this advances the bubble's clock past it.
	time.Sleep(ackLinger) // the bubble's clock: passes at once
	synctest.Wait()
	if !condition() {
		t.Fatalf("the condition does not hold once every goroutine is blocked, nor after the acknowledgement linger")
	}
}

// receive waits for a value from ch, failing the test with what it was
// waiting for when none comes within the bound.
func receive[T any](t fataler, ch <-chan T, what string) T {
	t.Helper()
	return receiveWithin(t, ch, within, what)
}

// receiveWithin is receive with its own bound.
func receiveWithin[T any](t fataler, ch <-chan T, bound time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case value := <-ch:
		return value
	case <-timer.C:
		t.Fatalf("waited %s for %s", bound, what)
		var zero T
		return zero
	}
}

// send hands value to ch, failing the test with what it was waiting for
// when nobody takes it within the bound.
func send[T any](t fataler, ch chan<- T, value T, what string) {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case ch <- value:
	case <-timer.C:
		t.Fatalf("waited %s for %s", within, what)
	}
}

// ---- connector / connection / reader ----

type fakeConnector struct {
	mu          sync.Mutex
	connectErrs []error // consumed one per Connect
	streamFor   func(queue string) (*fakeStream, error)
	connections []*fakeConnection
	configs     []messaging.StreamConfig
	// writable lets connections open writers, which record what the
	// runtime's settlement publishes in published.
	writable  bool
	published []messaging.Dispatch
	// noRequeue hides the streams' messaging.Requeuer.
	noRequeue bool
	// partial makes the streams' Read fill only some fields (partialStream).
	partial *partialStream
}

func (c *fakeConnector) publishedTo() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, d := range c.published {
		out = append(out, d.RoutingKey+" "+d.MessageID+": "+d.Error)
	}
	slices.Sort(out) // batches form as deliveries arrive: compare without order
	return out
}

// fakeWriter is a transport Writer: each Write lands at once.
type fakeWriter struct {
	connector *fakeConnector
}

func (w *fakeWriter) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	w.connector.mu.Lock()
	defer w.connector.mu.Unlock()
	w.connector.published = append(w.connector.published, dispatches...)
	return len(dispatches), nil
}

func (w *fakeWriter) Close() error { return nil }

func (c *fakeConnector) Connect(ctx context.Context) (messaging.Connection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.connectErrs) > 0 {
		err := c.connectErrs[0]
		c.connectErrs = c.connectErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	connection := &fakeConnection{connector: c}
	c.connections = append(c.connections, connection)
	return connection, nil
}

func (c *fakeConnector) Close() error { return nil }

func (c *fakeConnector) connection(i int) *fakeConnection {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connections[i]
}

func (c *fakeConnector) opened() []*fakeConnection {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*fakeConnection(nil), c.connections...)
}

func (c *fakeConnector) connectionCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.connections)
}

func (c *fakeConnector) stream(config messaging.StreamConfig) (*fakeStream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configs = append(c.configs, config)
	return c.streamFor(config.StreamName)
}

type fakeConnection struct {
	connector *fakeConnector
	mu        sync.Mutex
	closed    bool
}

func (c *fakeConnection) Reader(context.Context) (messaging.Reader, error) {
	return &fakeReader{connector: c.connector}, nil
}
func (c *fakeConnection) Writer(context.Context) (messaging.Writer, error) {
	c.connector.mu.Lock()
	defer c.connector.mu.Unlock()
	if !c.connector.writable {
		return nil, errors.New("not supported")
	}
	return &fakeWriter{connector: c.connector}, nil
}
func (c *fakeConnection) CommitWriter(context.Context) (messaging.CommitWriter, error) {
	return nil, errors.New("the runtime's settlement publishes through a batch.Writer, on a plain Writer")
}
func (c *fakeConnection) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}
func (c *fakeConnection) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

type fakeReader struct{ connector *fakeConnector }

func (r *fakeReader) Stream(_ context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	stream, err := r.connector.stream(config)
	if err != nil {
		return nil, err
	}
	if r.connector.noRequeue {
		return withoutRequeue{stream}, nil
	}
	if p := r.connector.partial; p != nil {
		p.fakeStream = stream
		return p, nil
	}
	return stream, nil
}

// partialStream is a Stream whose Read fills a delivery without headers only
// in its tag, message id and source queue, as a minimal transport might (one
// with headers whole), and counts
// the Reads whose target was not zeroed: leftovers of an earlier delivery
// would reach the handler as this one's.
type partialStream struct {
	*fakeStream
	mu      sync.Mutex
	reads   int
	unclean int
}

func (p *partialStream) Read(ctx context.Context, delivery *messaging.Delivery) error {
	p.mu.Lock()
	p.reads++
	if !reflect.ValueOf(*delivery).IsZero() {
		p.unclean++
	}
	p.mu.Unlock()
	var full messaging.Delivery
	if err := p.fakeStream.Read(ctx, &full); err != nil {
		return err
	}
	if full.Headers != nil {
		*delivery = full
		return nil
	}
	delivery.DeliveryID, delivery.MessageID, delivery.SourceQueue = full.DeliveryID, full.MessageID, full.SourceQueue
	return nil
}

func (p *partialStream) counts() (reads, unclean int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads, p.unclean
}

// withoutRequeue is a stream that cannot return one delivery to its queue.
type withoutRequeue struct{ messaging.Stream }

func (r *fakeReader) Close() error { return nil }

// ---- stream ----

type fakeStream struct {
	mu         sync.Mutex
	queue      []messaging.Delivery
	failWith   error // returned by Read once the queue is empty
	arrived    chan struct{}
	reads      int // Read calls started
	readsDone  int // Read calls that returned an error
	acks       [][]messaging.Delivery
	ackErr     error
	requeued   []string // message ids returned to the queue alone
	requeueErr error
	closed     bool
	closedCh   chan struct{}
}

func newFakeStream(deliveries ...messaging.Delivery) *fakeStream {
	return &fakeStream{queue: deliveries, arrived: make(chan struct{}, 1), closedCh: make(chan struct{})}
}

func (s *fakeStream) push(deliveries ...messaging.Delivery) {
	s.mu.Lock()
	s.queue = append(s.queue, deliveries...)
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
}

func (s *fakeStream) fail(err error) {
	s.mu.Lock()
	s.failWith = err
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
}

func (s *fakeStream) Read(ctx context.Context, delivery *messaging.Delivery) error {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			*delivery = s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return nil
		}
		if s.failWith != nil {
			s.readsDone++
			err := s.failWith
			s.mu.Unlock()
			return err
		}
		s.mu.Unlock()
		select {
		case <-s.arrived:
		case <-ctx.Done():
			s.mu.Lock()
			s.readsDone++
			s.mu.Unlock()
			return ctx.Err()
		case <-s.closedCh:
			s.mu.Lock()
			s.readsDone++
			s.mu.Unlock()
			return messaging.ErrClosed
		}
	}
}

func (s *fakeStream) Acknowledge(ctx context.Context, deliveries ...messaging.Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ackErr != nil {
		return s.ackErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.acks = append(s.acks, append([]messaging.Delivery(nil), deliveries...))
	return nil
}

func (s *fakeStream) Requeue(ctx context.Context, delivery messaging.Delivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.requeueErr != nil {
		return s.requeueErr
	}
	s.requeued = append(s.requeued, delivery.MessageID)
	return ctx.Err()
}

func (s *fakeStream) requeuedIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requeued...)
}

func (s *fakeStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.closedCh)
	}
	return nil
}

// waiting reports whether the reader has read n deliveries and is blocked on
// the next (so everything before is in the local buffer or a worker's hands).
func (s *fakeStream) waiting(n int) func() bool {
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.reads == n+1 && len(s.queue) == 0
	}
}

func (s *fakeStream) readEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readsDone > 0
}

func (s *fakeStream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// ackedIDs lists the acknowledged batches by message id.
func (s *fakeStream) ackedIDs() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	for _, batch := range s.acks {
		var ids []string
		for _, d := range batch {
			ids = append(ids, d.MessageID)
		}
		out = append(out, ids)
	}
	return out
}

// ackedFlat is every acknowledged id in order, however the acks were grouped.
func (s *fakeStream) ackedFlat() []string {
	var flat []string
	for _, group := range s.ackedIDs() {
		flat = append(flat, group...)
	}
	return flat
}

func delivery(id string) messaging.Delivery {
	return messaging.Delivery{MessageID: id, Message: id, SourceQueue: "q"}
}

// ---- handler ----

type fakeHandler struct {
	mu       sync.Mutex
	batches  [][]any
	contexts []context.Context
	block    chan struct{} // when non-nil, each Handle waits for a release
	entered  chan int      // receives the batch number when Handle starts
	panicOn  func(messages []any) any
	awaitCtx bool // Handle waits for its context to end
}

func newBlockingHandler() *fakeHandler {
	return &fakeHandler{block: make(chan struct{}), entered: make(chan int, 100)}
}

func (h *fakeHandler) Handle(ctx context.Context, messages ...any) {
	h.mu.Lock()
	h.batches = append(h.batches, messages)
	h.contexts = append(h.contexts, ctx)
	n := len(h.batches)
	h.mu.Unlock()
	if h.entered != nil {
		h.entered <- n
	}
	if h.awaitCtx {
		<-ctx.Done()
	}
	if h.block != nil {
		<-h.block
	}
	if h.panicOn != nil {
		if value := h.panicOn(messages); value != nil {
			panic(value)
		}
	}
}

// release lets one blocked Handle return, failing the test if none is
// waiting within 5 s.
func (h *fakeHandler) release(t fataler) { send(t, h.block, struct{}{}, "a blocked Handle to release") }

func (h *fakeHandler) handled() [][]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]any(nil), h.batches...)
}

// ---- monitor ----

type fakeMonitor struct {
	mu     sync.Mutex
	events []string
	// opens receives the time of each attempt to open a stream.
	opens chan time.Time
}

func newFakeMonitor() *fakeMonitor { return &fakeMonitor{opens: make(chan time.Time, 100)} }

func (m *fakeMonitor) add(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, fmt.Sprintf(format, args...))
}
func (m *fakeMonitor) StreamOpened(stream string, err error) {
	m.add("opened %s %v", stream, err)
	select {
	case m.opens <- time.Now():
	default:
	}
}
func (m *fakeMonitor) StreamClosed(stream string) { m.add("closed %s", stream) }
func (m *fakeMonitor) BatchHandled(stream string, count int, _ time.Duration) {
	m.add("handled %s %d", stream, count)
}
func (m *fakeMonitor) BatchAcknowledged(stream string, count int, err error) {
	m.add("acknowledged %s %d %v", stream, count, err)
}
func (m *fakeMonitor) ShutdownForced(stream string) { m.add("forced %s", stream) }
func (m *fakeMonitor) OutageStarted(stream string, cause error) {
	m.add("outage started %s %v", stream, cause)
}
func (m *fakeMonitor) OutageEnded(stream string, _ time.Duration) { m.add("outage ended %s", stream) }
func (m *fakeMonitor) DeliveriesRequeued(stream string, count int) {
	m.add("requeued %s %d", stream, count)
}

func (m *fakeMonitor) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.events...)
}

// ---- logger ----
