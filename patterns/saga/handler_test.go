package saga

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/idempotency"
)

func TestHandlerFixture(t *testing.T) {
	gunit.Run(new(HandlerFixture), t)
}

// HandlerFixture runs placements (reserve, charge, ship) through Handler over
// a memory store and a settler that records the verdicts.
type HandlerFixture struct {
	*gunit.Fixture
	store   *idempotency.MemoryStore
	settler *recordingSettler
	counts  map[string]int
	failAt  map[string]error // order id -> the error of its "ship" step
	refund  error            // the error of every "charge" undo
	handler messaging.Handler
}

type placement struct{ ID string }

func (f *HandlerFixture) Setup() {
	f.store = idempotency.NewMemoryStore(time.Hour)
	f.settler = &recordingSettler{verdicts: map[string]messaging.Decision{}}
	f.counts = map[string]int{}
	f.failAt = map[string]error{}
	count := func(what string) func(context.Context, placement) error {
		return func(_ context.Context, p placement) error { f.counts[what+" "+p.ID]++; return nil }
	}
	s, err := New("place", []Step[placement]{
		{Name: "reserve", Do: count("reserve"), Undo: count("release")},
		{Name: "charge", Do: count("charge"), Undo: func(ctx context.Context, p placement) error {
			f.counts["refund "+p.ID]++
			return f.refund
		}},
		{Name: "ship", Do: func(_ context.Context, p placement) error { return f.failAt[p.ID] }},
	})
	f.So(err, should.BeNil)
	f.handler = Handler(s, f.store, idempotency.Options.Logger(slog.New(slog.DiscardHandler)))
}

// deliver hands the handler one batch of placements with these ids.
func (f *HandlerFixture) deliver(ids ...string) (recovered any) {
	deliveries := make([]messaging.Delivery, len(ids))
	messages := make([]any, len(ids))
	for i, id := range ids {
		deliveries[i] = messaging.Delivery{MessageID: id, SourceQueue: "orders", Message: placement{ID: id}}
		messages[i] = placement{ID: id}
	}
	defer func() { recovered = recover() }()
	f.handler.Handle(messaging.WithSettler(messaging.WithDeliveries(context.Background(), deliveries), f.settler), messages...)
	return nil
}

func (f *HandlerFixture) TestARedeliveredMessageDoesNotRunItsSagaAgain() {
	f.So(f.deliver("o1", "o2"), should.BeNil)
	f.So(f.deliver("o1"), should.BeNil) // its acknowledgement was lost
	f.So(f.counts["reserve o1"], should.Equal, 1)
	f.So(f.counts["charge o1"], should.Equal, 1)
	f.So(f.settler.verdict("o1"), should.Equal, messaging.Accepted)
}

// A compensated saga is done too: its redelivery is not charged and refunded
// again.
func (f *HandlerFixture) TestACompensatedSagaIsNotRunAgainByItsRedelivery() {
	f.failAt["o1"] = errors.New("the courier refused it")
	f.So(f.deliver("o1"), should.BeNil)
	f.So(f.deliver("o1"), should.BeNil)
	f.So(f.counts["charge o1"], should.Equal, 1)
	f.So(f.counts["refund o1"], should.Equal, 1)
	f.So(f.counts["release o1"], should.Equal, 1)
	f.So(f.settler.verdict("o1"), should.Equal, messaging.Accepted)
}

// An undo that failed needs a person: the message is dead-lettered with the
// saga's account of what was not undone.
func (f *HandlerFixture) TestAnUnresolvedSagaIsRejected() {
	f.failAt["o1"] = errors.New("the courier refused it")
	f.refund = errors.New("the bank is closed")
	f.So(f.deliver("o1"), should.BeNil)
	decision := f.settler.decision("o1")
	f.So(decision.Verdict, should.Equal, messaging.Rejected)
	f.So(messaging.IsFatal(decision.Reason), should.BeTrue)
	f.So(decision.Reason.Error(), should.ContainSubstring, `NOT undone: charge`)
}

// A step that failed because a dependency was away is not the saga's verdict:
// the message is retried as an outage (no attempt spent), its key released,
// and the saga runs again; the others of the batch keep their keys.
func (f *HandlerFixture) TestASagaCompensatedForAnOutageRunsAgain() {
	f.failAt["o2"] = fmt.Errorf("courier service: %w", driver.ErrBadConn)
	f.So(f.deliver("o1", "o2"), should.BeNil)
	decision := f.settler.decision("o2")
	f.So(decision.Verdict, should.Equal, messaging.Retried)
	f.So(messaging.IsOutage(decision.Reason), should.BeTrue)
	f.So(f.settler.verdict("o1"), should.Equal, messaging.Accepted)
	delete(f.failAt, "o2")
	f.So(f.deliver("o1", "o2"), should.BeNil)
	f.So(f.counts["charge o2"], should.Equal, 2)
	f.So(f.counts["charge o1"], should.Equal, 1)
}

func (f *HandlerFixture) TestAMessageOfAnotherTypeIsRejected() {
	d := messaging.Delivery{MessageID: "x", SourceQueue: "orders", Message: "not a placement"}
	ctx := messaging.WithSettler(messaging.WithDeliveries(context.Background(), []messaging.Delivery{d}), f.settler)
	f.handler.Handle(ctx, "not a placement")
	decision := f.settler.decision("x")
	f.So(decision.Verdict, should.Equal, messaging.Rejected)
	f.So(messaging.IsFatal(decision.Reason), should.BeTrue)
	f.So(decision.Reason.Error(), should.ContainSubstring, "is a string, not the saga.placement")
}

// With FullDeliveryToHandler the message is the delivery; its decoded
// Message is the saga's value.
func (f *HandlerFixture) TestTheValueIsTakenFromAFullDelivery() {
	d := messaging.Delivery{MessageID: "o3", SourceQueue: "orders", Message: placement{ID: "o3"}}
	ctx := messaging.WithSettler(messaging.WithDeliveries(context.Background(), []messaging.Delivery{d}), f.settler)
	f.handler.Handle(ctx, d)
	f.So(f.counts["charge o3"], should.Equal, 1)
}

// recordingSettler records each delivery's decision.
type recordingSettler struct {
	mu       sync.Mutex
	verdicts map[string]messaging.Decision
}

func (s *recordingSettler) Settle(_ context.Context, d messaging.Delivery, decision messaging.Decision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.verdicts[d.MessageID] = decision
	return nil
}

func (s *recordingSettler) Decided(d messaging.Delivery) (messaging.Decision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	decision, ok := s.verdicts[d.MessageID]
	return decision, ok
}

func (s *recordingSettler) decision(id string) messaging.Decision {
	decision, _ := s.Decided(messaging.Delivery{MessageID: id})
	return decision
}

func (s *recordingSettler) verdict(id string) messaging.Verdict { return s.decision(id).Verdict }
