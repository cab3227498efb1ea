package messaging

import (
	"context"
	"errors"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestTypedFixture(t *testing.T) {
	gunit.Run(new(TypedFixture), t)
}

type TypedFixture struct {
	*gunit.Fixture
	settler *recordingSettler
	ctx     context.Context
}

type order struct{ ID int }

type recordingSettler struct {
	settled []Decision
	ids     []string
}

func (r *recordingSettler) Settle(_ context.Context, delivery Delivery, decision Decision) error {
	r.settled = append(r.settled, decision)
	r.ids = append(r.ids, delivery.MessageID)
	return nil
}

func (r *recordingSettler) Decided(Delivery) (Decision, bool) { return Decision{}, false }

func (f *TypedFixture) Setup() {
	f.settler = &recordingSettler{}
	f.ctx = WithSettler(context.Background(), f.settler)
}

func (f *TypedFixture) batch(messages ...any) context.Context {
	deliveries := make([]Delivery, len(messages))
	for i := range messages {
		deliveries[i] = Delivery{MessageID: string(rune('a' + i)), MessageType: "order"}
	}
	return WithDeliveries(f.ctx, deliveries)
}

func recovered(run func()) (value any) {
	defer func() { value = recover() }()
	run()
	return nil
}

func (f *TypedFixture) TestEachMessageArrivesTypedWithItsOwnEnvelope() {
	var seen []int
	var ids []string
	handler := HandleEach(func(ctx context.Context, o order) error {
		seen = append(seen, o.ID)
		d, ok := DeliveryFrom(ctx)
		f.So(ok, should.BeTrue)
		ids = append(ids, d.MessageID)
		return nil
	})
	handler.Handle(f.batch(order{1}, order{2}, order{3}), order{1}, order{2}, order{3})
	f.So(seen, should.Equal, []int{1, 2, 3})
	f.So(ids, should.Equal, []string{"a", "b", "c"})
	f.So(f.settler.settled, should.BeEmpty)
}

func (f *TypedFixture) TestAnErrorFailsTheBatchKeepingItsMarks() {
	down := Outage(errors.New("database unreachable"))
	for _, err := range []error{Fatalf("no such order"), down, errors.New("payment service 503")} {
		handler := HandleEach(func(_ context.Context, o order) error {
			if o.ID == 2 {
				return err
			}
			return nil
		})
		value := recovered(func() { handler.Handle(f.batch(order{1}, order{2}), order{1}, order{2}) })
		failed, ok := value.(error)
		f.So(ok, should.BeTrue)
		f.So(errors.Is(failed, err), should.BeTrue)
		f.So(IsFatal(failed), should.Equal, IsFatal(err))
		f.So(IsOutage(failed), should.Equal, IsOutage(err))
		f.So(failed.Error(), should.ContainSubstring, `message "b" (order)`)
	}
}

func (f *TypedFixture) TestAMessageOfAnotherTypeIsParkedAndTheRestHandled() {
	var seen []int
	handler := HandleEach(func(_ context.Context, o order) error { seen = append(seen, o.ID); return nil })
	handler.Handle(f.batch(order{1}, "not an order", order{3}), order{1}, "not an order", order{3})
	f.So(seen, should.Equal, []int{1, 3})
	f.So(f.settler.ids, should.Equal, []string{"b"})
	f.So(f.settler.settled[0].Verdict, should.Equal, Parked)
	f.So(f.settler.settled[0].Reason.Error(), should.ContainSubstring, "this handler takes messaging.order; message 1 of the batch is a string")
}

func (f *TypedFixture) TestWithoutASettlerAMessageOfAnotherTypeFailsTheBatchFatally() {
	handler := HandleEach(func(context.Context, order) error { return nil })
	value := recovered(func() { handler.Handle(context.Background(), 42) })
	err, ok := value.(error)
	f.So(ok, should.BeTrue)
	f.So(IsFatal(err), should.BeTrue)
}

func (f *TypedFixture) TestAFullDeliveryGivesItsMessageOrItself() {
	var seen []int
	HandleEach(func(_ context.Context, o order) error { seen = append(seen, o.ID); return nil }).
		Handle(context.Background(), Delivery{Message: order{7}})
	f.So(seen, should.Equal, []int{7})
	var whole []string
	HandleEach(func(_ context.Context, d Delivery) error { whole = append(whole, d.MessageID); return nil }).
		Handle(context.Background(), Delivery{MessageID: "x", Message: order{7}})
	f.So(whole, should.Equal, []string{"x"})
}

func (f *TypedFixture) TestABatchArrivesTypedWithTheEnvelopesOfWhatItHolds() {
	var got []int
	var ids []string
	handler := HandleBatch(func(ctx context.Context, orders []order) error {
		for _, o := range orders {
			got = append(got, o.ID)
		}
		for _, d := range DeliveriesFrom(ctx) {
			ids = append(ids, d.MessageID)
		}
		return nil
	})
	handler.Handle(f.batch(order{1}, 2.5, order{3}), order{1}, 2.5, order{3})
	f.So(got, should.Equal, []int{1, 3})
	f.So(ids, should.Equal, []string{"a", "c"})
	f.So(f.settler.ids, should.Equal, []string{"b"})

	value := recovered(func() {
		HandleBatch(func(context.Context, []order) error { return Fatalf("bad batch") }).Handle(context.Background(), order{1})
	})
	f.So(IsFatal(value.(error)), should.BeTrue)
}

func (f *TypedFixture) TestDeliveryFromNeedsExactlyOne() {
	_, ok := DeliveryFrom(context.Background())
	f.So(ok, should.BeFalse)
	_, ok = DeliveryFrom(WithDeliveries(context.Background(), make([]Delivery, 2)))
	f.So(ok, should.BeFalse)
}
