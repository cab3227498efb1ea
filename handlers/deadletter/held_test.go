package deadletter

import (
	"context"
	"errors"
	"time"

	"github.com/smarty/assertions/should"
)

func (f *HandlerFixture) TestTheSameWayRuleHoldsTheSameMessagesOnlyForABoundedTime() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("unknown item")) }
	h := f.handler().(*handler)
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	h.held.now = func() time.Time { return clock }
	batch := []any{delivery("a"), delivery("bb")}

	value := recovered(func() { h.Handle(context.Background(), batch...) })
	f.So(value, should.NotBeNil) // held: the two identical failures read as an outage
	f.So(f.connector.dispatches(), should.BeEmpty)

	clock = clock.Add(SameFailureHold)
	value = recovered(func() { h.Handle(context.Background(), batch...) })
	f.So(value, should.NotBeNil) // still within the bound
	f.So(f.connector.dispatches(), should.BeEmpty)

	clock = clock.Add(time.Second)
	value = recovered(func() { h.Handle(context.Background(), batch...) })
	f.So(value, should.BeNil) // past it: each is failing on its own, and set aside
	f.So(f.connector.targets(), should.Equal, []string{
		"q.dlq a: the handler failed: unknown item",
		"q.dlq bb: the handler failed: unknown item",
	})
	f.So(h.held.first, should.BeEmpty)
}

func (f *HandlerFixture) TestTheMemoryOfHeldMessagesIsBounded() {
	m := newHeldMemory()
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return clock }
	for i := range heldLimit + 100 {
		m.overdue([]string{time.Duration(i).String()})
	}
	f.So(len(m.first), should.Equal, heldLimit)
	clock = clock.Add(3 * SameFailureHold)
	m.overdue([]string{"new"})
	f.So(len(m.first), should.Equal, 1)
}
