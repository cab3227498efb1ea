package idempotency

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestMemoryStoreFixture(t *testing.T) {
	gunit.Run(new(MemoryStoreFixture), t)
}

// MemoryStoreFixture runs each test in a synctest bubble, so the leases and
// the TTL pass on the bubble's clock.
type MemoryStoreFixture struct {
	*gunit.Fixture
	store *MemoryStore
	ctx   context.Context
}

func (f *MemoryStoreFixture) inBubble(test func()) {
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		f.ctx = context.Background()
		f.store = NewMemoryStore(time.Hour, StoreOptions.ClaimTimeout(time.Minute))
		test()
	})
}

func (f *MemoryStoreFixture) claim(key string) Claim {
	c, err := f.store.TryClaim(f.ctx, key)
	f.So(err, should.BeNil)
	f.So(c.Key, should.Equal, key)
	return c
}

func (f *MemoryStoreFixture) TestTheThreeStates() {
	f.inBubble(func() {
		c := f.claim("k")
		f.So(c.Result, should.Equal, Claimed)
		f.So(c.Owner, should.NotBeBlank)
		f.So(c.Lease, should.Equal, time.Minute)
		f.So(f.claim("k").Result, should.Equal, InProgress)
		f.So(f.store.Confirm(f.ctx, c), should.BeNil)
		f.So(f.claim("k").Result, should.Equal, Duplicate)
	})
}

func (f *MemoryStoreFixture) TestAReleasedKeyIsClaimableAgain() {
	f.inBubble(func() {
		f.So(f.store.Release(f.ctx, f.claim("k")), should.BeNil)
		f.So(f.claim("k").Result, should.Equal, Claimed)
	})
}

func (f *MemoryStoreFixture) TestAConfirmedKeyIsNotForgottenByALateRelease() {
	f.inBubble(func() {
		c := f.claim("k")
		f.So(f.store.Confirm(f.ctx, c), should.BeNil)
		f.So(f.store.Release(f.ctx, c), should.BeNil)
		f.So(f.claim("k").Result, should.Equal, Duplicate)
	})
}

func (f *MemoryStoreFixture) TestAClaimWhoseLeaseEndedIsTakenAgain() {
	f.inBubble(func() {
		f.claim("k")
		time.Sleep(59 * time.Second) // the bubble's clock
		f.So(f.claim("k").Result, should.Equal, InProgress)
		time.Sleep(time.Second) // the bubble's clock
		f.So(f.claim("k").Result, should.Equal, Claimed)
		f.So(f.claim("k").Result, should.Equal, InProgress) // the new holder's lease
	})
}

// The first holder's lease ran out and a second delivery took the key: the
// first can neither release nor confirm the second's claim, nor renew its own.
func (f *MemoryStoreFixture) TestALateHolderCannotTouchTheClaimThatReplacedIt() {
	f.inBubble(func() {
		first := f.claim("k")
		time.Sleep(time.Minute) // the bubble's clock
		second := f.claim("k")
		f.So(second.Result, should.Equal, Claimed)
		f.So(second.Owner, should.NotEqual, first.Owner)

		f.So(f.store.Release(f.ctx, first), should.BeNil)
		f.So(f.claim("k").Result, should.Equal, InProgress) // still the second's
		f.So(errors.Is(f.store.Renew(f.ctx, first), ErrClaimLost), should.BeTrue)
		f.So(errors.Is(f.store.Confirm(f.ctx, first), ErrClaimLost), should.BeTrue)
		f.So(f.claim("k").Result, should.Equal, InProgress)

		f.So(f.store.Confirm(f.ctx, second), should.BeNil)
		f.So(f.claim("k").Result, should.Equal, Duplicate)
	})
}

func (f *MemoryStoreFixture) TestARenewedClaimKeepsItsKeyPastTheLease() {
	f.inBubble(func() {
		c := f.claim("k")
		for range 5 {
			time.Sleep(40 * time.Second) // the bubble's clock
			f.So(f.store.Renew(f.ctx, c), should.BeNil)
			f.So(f.claim("k").Result, should.Equal, InProgress)
		}
		f.So(f.store.Confirm(f.ctx, c), should.BeNil)
	})
}

func (f *MemoryStoreFixture) TestAConfirmedOrReleasedClaimCannotBeRenewed() {
	f.inBubble(func() {
		c := f.claim("a")
		f.So(f.store.Confirm(f.ctx, c), should.BeNil)
		f.So(errors.Is(f.store.Renew(f.ctx, c), ErrClaimLost), should.BeTrue)
		d := f.claim("b")
		f.So(f.store.Release(f.ctx, d), should.BeNil)
		f.So(errors.Is(f.store.Renew(f.ctx, d), ErrClaimLost), should.BeTrue)
		f.So(errors.Is(f.store.Confirm(f.ctx, Claim{Key: "c"}), ErrClaimLost), should.BeTrue)
	})
}

func (f *MemoryStoreFixture) TestEntriesOlderThanTheTTLAreSweptOnClaim() {
	f.inBubble(func() {
		f.So(f.store.Confirm(f.ctx, f.claim("a")), should.BeNil)
		f.claim("b")
		f.So(f.store.Len(), should.Equal, 2)
		time.Sleep(time.Hour) // the bubble's clock
		f.So(f.claim("c").Result, should.Equal, Claimed)
		f.So(f.store.Len(), should.Equal, 1)
		f.So(f.claim("a").Result, should.Equal, Claimed)
	})
}

func (f *MemoryStoreFixture) TestDefaults() {
	store := NewMemoryStore(0)
	f.So(store.ttl, should.Equal, time.Hour)
	f.So(store.lease, should.Equal, DefaultClaimTimeout)
}
