package ordering

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
)

// recorder is an inner handler that logs "start id" and "end id" per batch
// (id: its first message id) and, for the ids in hold, blocks until released.
type recorder struct {
	mu     sync.Mutex
	events []string
	hold   map[string]chan struct{}
}

func newRecorder() *recorder { return &recorder{hold: map[string]chan struct{}{}} }

func (r *recorder) holdBack(id string) { r.hold[id] = make(chan struct{}) }
func (r *recorder) release(id string)  { close(r.hold[id]) }

func (r *recorder) Handle(ctx context.Context, messages ...any) {
	id := messaging.DeliveriesFrom(ctx)[0].MessageID
	r.log("start " + id)
	if hold, ok := r.hold[id]; ok {
		<-hold
	}
	r.log("end " + id)
}

func (r *recorder) log(event string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event)
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// delivery is message id from queue "orders" with delivery tag and, unless
// key is empty, header "entity" = key.
func delivery(id string, tag uint64, key string) messaging.Delivery {
	d := messaging.Delivery{MessageID: id, DeliveryID: tag, SourceQueue: "orders", Headers: map[string]any{}}
	if key != "" {
		d.Headers["entity"] = key
	}
	d.Message = d
	return d
}

// fakeMonitor records the events.
type fakeMonitor struct {
	mu      sync.Mutex
	waited  []time.Duration
	skipped int
}

func (m *fakeMonitor) Waited(_ string, waited time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waited = append(m.waited, waited)
}

func (m *fakeMonitor) GapSkipped(string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.skipped++
}

func (m *fakeMonitor) counts() (waits, skipped int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waited), m.skipped
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(prefix, i)
	}
	return out
}
