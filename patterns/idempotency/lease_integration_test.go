package idempotency

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
)

// TestAClaimIsFencedWhenItsHolderOutlivesItsLease delivers one key three
// times to the guard over each store (memory, MariaDB, PostgreSQL, SQLite)
// with a 2 s claim timeout: the first copy
// works until the second has been answered and then fails, the second arrives 2.3 s after the first began
// (past the first one's lease, had it not been renewed), the third once the
// first has failed and released its claim, while the second (had it run)
// still works. The effect happens once, no two copies ever run together, and
// the second copy, put back as in progress, finds the key done when it comes
// back. It runs in real time: the leases are times the database holds.
func TestAClaimIsFencedWhenItsHolderOutlivesItsLease(t *testing.T) {
	stores := map[string]func(t *testing.T) Store{
		"memory": func(*testing.T) Store { return NewMemoryStore(time.Hour, StoreOptions.ClaimTimeout(2*time.Second)) },
	}
	for _, b := range backends {
		stores[b.name] = func(t *testing.T) Store {
			db := b.open(t)
			store, err := NewSQLStore(db, b.dialect, StoreOptions.Table(sqlTable(t, b, db)), StoreOptions.ClaimTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			return store
		}
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newLeaseScenario(t, open(t))
			s.run()
			if got := s.effects.Load(); got != 1 {
				t.Errorf("the effect happened %d times; want once", got)
			}
			if got := s.most.Load(); got != 1 {
				t.Errorf("%d copies ran at once; want one at a time", got)
			}
			if verdict := s.decided.Verdict; verdict != messaging.InProgressed {
				t.Errorf("the second copy, arriving while the first worked, was %s; want in progress", verdict)
			}
		})
	}
}

// leaseScenario is the three deliveries of one key, each a copy numbered in
// its message.
type leaseScenario struct {
	t        *testing.T
	handler  messaging.Handler
	settler  *fakeSettler
	running  atomic.Int32
	most     atomic.Int32
	effects  atomic.Int32
	first    chan struct{} // closed when copy 1 starts working
	second   chan struct{} // closed when copy 2's first delivery returned
	third    chan struct{} // closed when copy 3's delivery returned
	firstRan sync.Once
	decided  messaging.Decision // the second copy's settlement, the first time
}

func newLeaseScenario(t *testing.T, store Store) *leaseScenario {
	s := &leaseScenario{t: t, settler: newFakeSettler(), first: make(chan struct{}), second: make(chan struct{}), third: make(chan struct{})}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s.handler = Middleware(store, Options.Logger(quiet), Options.IdempotentBy(func(any, messaging.Delivery) string { return "the-order" }))(messaging.HandlerFunc(s.work))
	return s
}

// work is the effect: copy 1 works past its 2 s lease, until copy 2 has been
// delivered and answered, and fails; copy 2 (if it runs) works until copy 3
// has been delivered; each copy that finishes counts one effect.
func (s *leaseScenario) work(_ context.Context, messages ...any) {
	now := s.running.Add(1)
	defer s.running.Add(-1)
	for most := s.most.Load(); now > most && !s.most.CompareAndSwap(most, now); most = s.most.Load() {
	}
	switch messages[0] {
	case "copy-1":
		s.firstRan.Do(func() { close(s.first) })
		select {
		case <-s.second:
		case <-time.After(10 * time.Second):
		}
		panic(errors.New("the first copy failed"))
	case "copy-2":
		select {
		case <-s.third:
		case <-time.After(5 * time.Second):
		}
	}
	s.effects.Add(1)
}

// deliver hands one copy to the handler and returns its panic.
func (s *leaseScenario) deliver(id string) (recovered any) {
	defer func() { recovered = recover() }()
	d := messaging.Delivery{MessageID: id, SourceQueue: "orders", Message: id}
	ctx := messaging.WithSettler(messaging.WithDeliveries(context.Background(), []messaging.Delivery{d}), s.settler)
	s.handler.Handle(ctx, id)
	return nil
}

func (s *leaseScenario) run() {
	var wg sync.WaitGroup
	first := make(chan struct{})
	wg.Go(func() {
		defer close(first)
		if recovered := s.deliver("copy-1"); recovered == nil {
			s.t.Error("the first copy did not fail")
		}
	})
	select {
	case <-s.first:
	case <-time.After(10 * time.Second):
		s.t.Fatal("the first copy did not start within 10s")
	}
	wg.Go(func() {
		defer close(s.second)
		time.Sleep(2300 * time.Millisecond) // real time: past the first claim's 2 s lease, which the database measures
		s.deliver("copy-2")
	})
	<-first // the first copy failed and let its claim go
	wg.Go(func() {
		defer close(s.third)
		s.deliver("copy-3")
	})
	wg.Wait()
	s.decided, _ = s.settler.Decided(messaging.Delivery{MessageID: "copy-2"})
	// The second copy comes back after its in-progress delay: the work is
	// done by then.
	s.deliver("copy-2")
}
