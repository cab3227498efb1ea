package messaging

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestContractsFixture(t *testing.T) {
	gunit.Run(new(ContractsFixture), t)
}

type ContractsFixture struct {
	*gunit.Fixture
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func (f *ContractsFixture) TestNewIDIsAUniqueVersion4UUID() {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		f.So(uuidV4.MatchString(id), should.BeTrue)
		f.So(seen[id], should.BeFalse)
		seen[id] = true
	}
}

func (f *ContractsFixture) TestPublishErrorAccountsForEachMessage() {
	err := &PublishError{Results: []PublishResult{
		{MessageID: "a", Confirmed: true, Routed: true},
		{MessageID: "b", Confirmed: true, Err: ErrUnroutable},
		{MessageID: "c", Err: ErrArrivalUnknown},
	}}
	f.So(err.Error(), should.StartWith, "2 of 3 messages were not confirmed; 1 were. The first failure was: ")
	f.So(err.Error(), should.ContainSubstring, ErrUnroutable.Error())
	f.So(errors.Is(err, ErrUnroutable), should.BeTrue)
	f.So(errors.Is(err, ErrArrivalUnknown), should.BeTrue)
	f.So(errors.Is(err, ErrRefused), should.BeFalse)
	f.So(err.Failed(), should.HaveLength, 2)
}

func (f *ContractsFixture) TestFatalIsSeenThroughWrapping() {
	base := errors.New("bad input")
	wrapped := errors.Join(errors.New("context"), Fatal(base))
	f.So(IsFatal(wrapped), should.BeTrue)
	f.So(errors.Is(wrapped, base), should.BeTrue)
	f.So(IsFatal(base), should.BeFalse)
	f.So(Fatal(nil), should.BeNil)
	f.So(IsFatal(Fatalf("code %d", 7)), should.BeTrue)
}

func (f *ContractsFixture) TestRedispatchKeepsTheOriginalBytesAndEnvelope() {
	delivery := Delivery{
		SourceQueue: "orders", Topic: "events", RoutingKey: "placed",
		MessageID: "id-1", CorrelationID: "c-1", CausationID: "x-1", ReplyTo: "replies",
		MessageType: "order-placed", Version: 2, ContentType: "application/json", Attempt: 3,
		FirstSeen: time.Unix(100, 0), Origin: "svc@host", Route: []string{"a", "b"}, RoutePosition: 1,
		Headers: map[string]any{"h": "v"}, Payload: []byte("body"),
	}
	dispatch := delivery.Redispatch("orders.dlq")
	f.So(dispatch.Topic, should.Equal, "")
	f.So(dispatch.RoutingKey, should.Equal, "orders.dlq")
	f.So(dispatch.Mandatory, should.BeTrue)
	f.So(dispatch.Transient, should.BeFalse)
	f.So(dispatch.MessageID, should.Equal, "id-1")
	f.So(dispatch.Attempt, should.Equal, 3)
	f.So(dispatch.Route, should.Equal, []string{"a", "b"})
	f.So(string(dispatch.Payload), should.Equal, "body")
	dispatch.Headers["h"] = "changed"
	f.So(delivery.Headers["h"], should.Equal, "v")
}

func (f *ContractsFixture) TestTransactionSlotTravelsInTheContext() {
	f.So(TransactionSlotFrom(context.Background()), should.BeNil)
	ctx, slot := WithTransactionSlot(context.Background())
	f.So(TransactionSlotFrom(ctx), should.Equal, slot)
}

func (f *ContractsFixture) TestHandlerFuncCallsTheFunction() {
	var got []any
	HandlerFunc(func(_ context.Context, messages ...any) { got = messages }).Handle(context.Background(), 1, 2)
	f.So(got, should.Equal, []any{1, 2})
}
