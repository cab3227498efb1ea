package idempotency

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/smarty/assertions/should"
	"github.com/warrenmq/messaging"
)

// fakeBatchStore is fakeStore with the batch calls: TryClaimAll answers every
// key as TryClaim does and fails whole with the first key's error;
// ConfirmAll confirms each claim as Confirm does.
type fakeBatchStore struct {
	*fakeStore
	batches []string
}

func (s *fakeBatchStore) TryClaimAll(ctx context.Context, keys []string) ([]Claim, error) {
	s.mu.Lock()
	s.batches = append(s.batches, fmt.Sprint("claim ", keys))
	s.mu.Unlock()
	claims := make([]Claim, len(keys))
	for i, key := range keys {
		claim, err := s.TryClaim(ctx, key)
		if err != nil {
			return nil, err
		}
		claims[i] = claim
	}
	return claims, nil
}

func (s *fakeBatchStore) ConfirmAll(ctx context.Context, claims []Claim) []error {
	s.mu.Lock()
	s.batches = append(s.batches, fmt.Sprintf("confirm %d", len(claims)))
	s.mu.Unlock()
	var errs []error
	for i, c := range claims {
		if err := s.Confirm(ctx, c); err != nil {
			if errs == nil {
				errs = make([]error, len(claims))
			}
			errs[i] = err
		}
	}
	return errs
}

// withBatchCalls makes the guard's store f.store with the batch calls.
func (f *HandlerFixture) withBatchCalls() *fakeBatchStore {
	f.batched = &fakeBatchStore{fakeStore: f.store}
	return f.batched
}

// handleBatchWith is handleBatch with the settler given.
func handleBatchWith(handler messaging.Handler, settler *fakeSettler, ids ...string) {
	deliveries := make([]messaging.Delivery, len(ids))
	messages := make([]any, len(ids))
	for i, id := range ids {
		deliveries[i] = messaging.Delivery{DeliveryID: uint64(i + 1), MessageID: id, SourceQueue: "orders", Message: id}
		messages[i] = id
	}
	handler.Handle(messaging.WithSettler(messaging.WithDeliveries(context.Background(), deliveries), settler), messages...)
}

func (f *HandlerFixture) TestABatchIsClaimedAndConfirmedWithOneCallEach() {
	batched := f.withBatchCalls()
	f.store.results["m1"] = Duplicate
	f.So(f.handle(), should.BeNil)
	f.So(batched.batches, should.Equal, []string{"claim [m0 m1 m2]", "confirm 2"})
	f.So(f.received, should.Equal, []any{"m0", "m2"})
	f.So(f.settler.order, should.Equal, []string{"m1 accepted"})
	f.So(f.store.confirmed, should.Equal, []string{"m0", "m2"})
}

// A key the store refuses as fatal fails the batch call: the batch is then
// claimed key by key, so only that message is refused.
func (f *HandlerFixture) TestBatchAFatalKeyIsRefusedAloneByClaimingKeyByKey() {
	f.withBatchCalls()
	f.store.errs["m1"] = messaging.Fatal(errors.New("key too long"))
	f.So(f.handle(), should.BeNil)
	f.So(f.received, should.Equal, []any{"m0", "m2"})
	decision := f.settler.decisions["m1"]
	f.So(messaging.IsFatal(decision.Reason), should.BeTrue)
	f.So(f.monitor.count("store_failed claim"), should.Equal, 0)
}

// A store error fails the batch's claim: every message is retried with it,
// and none runs.
func (f *HandlerFixture) TestBatchAStoreErrorRetriesEveryMessageOfTheBatch() {
	f.withBatchCalls()
	f.store.errs["m2"] = errors.New("deadlock found")
	f.So(f.handle(), should.BeNil)
	f.So(f.received, should.BeEmpty)
	for _, id := range []string{"m0", "m1", "m2"} {
		f.So(f.settler.decisions[id].Verdict, should.Equal, messaging.Retried)
	}
	f.So(f.monitor.count("store_failed claim"), should.Equal, 3)
}

func (f *HandlerFixture) TestBatchAnUnreachableStoreHoldsTheBatchAsAnOutage() {
	f.withBatchCalls()
	f.store.errs["m0"] = fmt.Errorf("dial: %w", driver.ErrBadConn)
	err, _ := f.handle().(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(f.received, should.BeEmpty)
	f.So(f.store.released, should.BeEmpty) // nothing was claimed
	f.So(f.settler.order, should.BeEmpty)
}

func (f *HandlerFixture) TestBatchConfirmReportsEachClaimLostOrFailed() {
	f.withBatchCalls()
	f.store.errs["confirm m0"] = ErrClaimLost
	f.store.errs["confirm m2"] = errors.New("gone")
	f.So(f.handle(), should.BeNil)
	f.So(f.monitor.count("claim_lost"), should.Equal, 1)
	f.So(f.monitor.count("store_failed confirm"), should.Equal, 1)
}
