package idempotency

import (
	"context"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestMemoryStoreFixture(t *testing.T) {
	gunit.Run(new(MemoryStoreFixture), t)
}

type MemoryStoreFixture struct {
	*gunit.Fixture
	now   time.Time
	store *MemoryStore
	ctx   context.Context
}

func (f *MemoryStoreFixture) Setup() {
	f.now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.ctx = context.Background()
	f.store = NewMemoryStore(time.Hour, StoreOptions.ClaimTimeout(time.Minute), StoreOptions.Clock(func() time.Time { return f.now }))
}

func (f *MemoryStoreFixture) claim(key string) ClaimResult {
	result, err := f.store.TryClaim(f.ctx, key)
	f.So(err, should.BeNil)
	return result
}

func (f *MemoryStoreFixture) TestTheThreeStates() {
	f.So(f.claim("k"), should.Equal, Claimed)
	f.So(f.claim("k"), should.Equal, InProgress)
	f.So(f.store.Confirm(f.ctx, "k"), should.BeNil)
	f.So(f.claim("k"), should.Equal, Duplicate)
}

func (f *MemoryStoreFixture) TestAReleasedKeyIsClaimableAgain() {
	f.claim("k")
	f.So(f.store.Release(f.ctx, "k"), should.BeNil)
	f.So(f.claim("k"), should.Equal, Claimed)
}

func (f *MemoryStoreFixture) TestAConfirmedKeyIsNotForgottenByALateRelease() {
	f.claim("k")
	f.store.Confirm(f.ctx, "k")
	f.store.Release(f.ctx, "k")
	f.So(f.claim("k"), should.Equal, Duplicate)
}

func (f *MemoryStoreFixture) TestAClaimWhoseLeaseEndedIsTakenAgain() {
	f.claim("k")
	f.now = f.now.Add(59 * time.Second)
	f.So(f.claim("k"), should.Equal, InProgress)
	f.now = f.now.Add(time.Second)
	f.So(f.claim("k"), should.Equal, Claimed)
	f.So(f.claim("k"), should.Equal, InProgress) // the new holder's lease
}

func (f *MemoryStoreFixture) TestEntriesOlderThanTheTTLAreSweptOnClaim() {
	f.claim("a")
	f.store.Confirm(f.ctx, "a")
	f.claim("b")
	f.So(f.store.Len(), should.Equal, 2)
	f.now = f.now.Add(time.Hour)
	f.So(f.claim("c"), should.Equal, Claimed)
	f.So(f.store.Len(), should.Equal, 1)
	f.So(f.claim("a"), should.Equal, Claimed)
}

func (f *MemoryStoreFixture) TestClaimKeepsItsBool() {
	taken, err := f.store.Claim(f.ctx, "k")
	f.So(taken, should.BeTrue)
	f.So(err, should.BeNil)
	taken, _ = f.store.Claim(f.ctx, "k")
	f.So(taken, should.BeFalse)
}

func (f *MemoryStoreFixture) TestDefaults() {
	store := NewMemoryStore(0)
	f.So(store.ttl, should.Equal, time.Hour)
	f.So(store.lease, should.Equal, DefaultClaimTimeout)
}
