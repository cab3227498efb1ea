package memory

import (
	"context"
	"sync"
	"time"

	"fmt"
	"runtime"
	"strings"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/transporttest"
)

// bound is the failure guard on every wait in these tests; a passing test
// never waits for it.
const bound = 5 * time.Second

func (f *TopicFixture) ctx() context.Context { return context.Background() }

// world is what each fixture test starts from: a broker with a recording
// monitor, and a bounded context. A test that needs time to pass runs in a
// bubble (inBubble), where it passes at once.
type world struct {
	*gunit.Fixture
	ctx     context.Context
	cancel  context.CancelFunc
	monitor *recordingMonitor
	broker  *Broker
}

func newWorld(f *gunit.Fixture) *world {
	w := &world{Fixture: f, monitor: &recordingMonitor{}}
	w.ctx, w.cancel = context.WithTimeout(context.Background(), bound)
	w.broker = New(Options.Monitor(w.monitor), Options.Origin("tests@here"))
	return w
}

// inBubble and pass are the transport suite's bubble helpers.
func inBubble[F any](t gunit.TestingT, fixture *F, setup, teardown, test func()) {
	transporttest.InBubble(t, fixture, setup, teardown, test)
}

var pass = transporttest.Pass

func (w *world) close() {
	_ = w.broker.Close()
	w.cancel()
}

func (w *world) connect() messaging.Connection {
	conn, err := w.broker.Connect(w.ctx)
	w.So(err, should.BeNil)
	return conn
}

func (w *world) stream(conn messaging.Connection, config messaging.StreamConfig) (messaging.Stream, error) {
	r, err := conn.Reader(w.ctx)
	w.So(err, should.BeNil)
	return r.Stream(w.ctx, config)
}

// queue declares a durable queue and returns its name.
func (w *world) queue(name string) string {
	w.So(w.broker.DeclareQueue(name, QueueOptions{Durable: true}), should.BeNil)
	return name
}

func (w *world) publish(queue string, payloads ...string) {
	for _, p := range payloads {
		w.So(w.broker.Publish(w.ctx, messaging.Dispatch{RoutingKey: queue, Payload: []byte(p), Mandatory: true}), should.BeNil)
	}
}

func (w *world) read(s messaging.Stream) messaging.Delivery {
	var d messaging.Delivery
	w.So(s.Read(w.ctx, &d), should.BeNil)
	return d
}

func payloads(deliveries ...messaging.Delivery) []string {
	var out []string
	for _, d := range deliveries {
		out = append(out, string(d.Payload))
	}
	return out
}

func ctxDispatch(topic, key string) messaging.Dispatch {
	return messaging.Dispatch{Topic: topic, RoutingKey: key, Payload: []byte(key)}
}

// recordingMonitor records every callback as a line.
type recordingMonitor struct {
	mu    sync.Mutex
	calls []string
}

func (m *recordingMonitor) record(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, fmt.Sprintf(format, args...))
}

func (m *recordingMonitor) Calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...)
}

func (m *recordingMonitor) MessagePublished(exchange, key string, queues int) {
	m.record("published %q %q %d", exchange, key, queues)
}
func (m *recordingMonitor) MessageDelivered(queue string) { m.record("delivered %s", queue) }
func (m *recordingMonitor) MessagesAcknowledged(queue string, count int) {
	m.record("acknowledged %s %d", queue, count)
}
func (m *recordingMonitor) MessagesRequeued(queue string, count int) {
	m.record("requeued %s %d", queue, count)
}
func (m *recordingMonitor) MessageExpired(queue string) { m.record("expired %s", queue) }

// errorContains is an assertion: actual is an error whose text contains expected[0].
func errorContains(actual any, expected ...any) string {
	err, ok := actual.(error)
	if !ok || err == nil {
		return fmt.Sprintf("expected an error containing %q, got %#v", expected[0], actual)
	}
	if !strings.Contains(err.Error(), expected[0].(string)) {
		return fmt.Sprintf("expected an error containing %q, got %q", expected[0], err)
	}
	return ""
}

// awaitBlockedReads returns once n Reads are blocked inside the broker, so a
// test acts on a Read that is truly waiting rather than one not yet started.
func (w *world) awaitBlockedReads(b *Broker, n int) {
	for w.ctx.Err() == nil {
		b.mu.Lock()
		waiting := b.waiting
		b.mu.Unlock()
		if waiting >= n {
			return
		}
		runtime.Gosched()
	}
	w.Errorf("%d read(s) never blocked", n)
}
