package middleware

import (
	"context"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
)

// fakeSettler records the first decision per message id, as the settlement
// decorator does; fail makes Settle fail.
type fakeSettler struct {
	mu        sync.Mutex
	decisions map[string]messaging.Decision
	fail      error
}

func newFakeSettler() *fakeSettler {
	return &fakeSettler{decisions: map[string]messaging.Decision{}}
}

func (s *fakeSettler) Settle(_ context.Context, d messaging.Delivery, decision messaging.Decision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if _, done := s.decisions[d.MessageID]; !done {
		s.decisions[d.MessageID] = decision
	}
	return nil
}

func (s *fakeSettler) Decided(d messaging.Delivery) (messaging.Decision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	decision, ok := s.decisions[d.MessageID]
	return decision, ok
}

func (s *fakeSettler) verdict(id string) messaging.Verdict {
	decision, _ := s.Decided(messaging.Delivery{MessageID: id})
	return decision.Verdict
}

func (s *fakeSettler) reason(id string) string {
	decision, _ := s.Decided(messaging.Delivery{MessageID: id})
	if decision.Reason == nil {
		return ""
	}
	return decision.Reason.Error()
}

type fakeMonitor struct {
	mu        sync.Mutex
	timedOut  int
	recovered int
}

func (m *fakeMonitor) TimedOut(string)  { m.mu.Lock(); m.timedOut++; m.mu.Unlock() }
func (m *fakeMonitor) Recovered(string) { m.mu.Lock(); m.recovered++; m.mu.Unlock() }

// batch returns n deliveries m0..m(n-1) of queue "orders".
func batch(n int) []messaging.Delivery {
	out := make([]messaging.Delivery, n)
	for i := range out {
		id := fmt.Sprint("m", i)
		out[i] = messaging.Delivery{MessageID: id, MessageType: "order.placed", SourceQueue: "orders", Attempt: 2, Message: id}
	}
	return out
}

// handle runs handler over deliveries with the settler in the context and
// returns what it panicked with.
func handle(handler messaging.Handler, settler messaging.Settler, deliveries []messaging.Delivery) (recovered any) {
	defer func() { recovered = recover() }()
	ctx := messaging.WithDeliveries(context.Background(), deliveries)
	if settler != nil {
		ctx = messaging.WithSettler(ctx, settler)
	}
	messages := make([]any, len(deliveries))
	for i, d := range deliveries {
		messages[i] = d.Message
	}
	handler.Handle(ctx, messages...)
	return nil
}
