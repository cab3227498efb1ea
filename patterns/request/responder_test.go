package request

import (
	"context"
	"errors"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestResponderFixture(t *testing.T) {
	gunit.Run(new(ResponderFixture), t)
}

// ResponderFixture hands Handler a batch of requests as messaging.Delivery
// values, with a fake reply writer and settler.
type ResponderFixture struct {
	*gunit.Fixture
	writer   *fakeWriter
	settler  *fakeSettler
	monitor  *fakeMonitor
	handler  *Handler[priceRequest, priceResponse]
	calls    []string
	failWith error
}

func (f *ResponderFixture) Setup() {
	f.writer = &fakeWriter{}
	f.settler = newFakeSettler()
	f.monitor = newFakeMonitor()
	f.handler = NewHandler(f.writer, func(_ context.Context, _ messaging.Delivery, r priceRequest) (priceResponse, error) {
		f.calls = append(f.calls, r.SKU)
		if f.failWith != nil {
			return priceResponse{SKU: "ignored"}, f.failWith
		}
		return priceResponse{SKU: r.SKU, Cents: 7}, nil
	}, Options.Monitor(f.monitor))
}

func request(id string, headers map[string]any, replyTo string) messaging.Delivery {
	return messaging.Delivery{MessageID: id, CorrelationID: "corr-" + id, SourceQueue: "prices", ReplyTo: replyTo, Headers: headers, Payload: []byte(`{"sku":"` + id + `"}`)}
}

func (f *ResponderFixture) handle(ctx context.Context, deliveries ...messaging.Delivery) (value any) {
	messages := make([]any, len(deliveries))
	for i, d := range deliveries {
		messages[i] = d
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx = messaging.WithSettler(messaging.WithDeliveries(ctx, deliveries), f.settler)
	defer func() { value = recover() }()
	f.handler.Handle(ctx, messages...)
	return nil
}

func (f *ResponderFixture) TestTheReplyGoesToTheDefaultExchangeNotMandatoryWithCorrelationAndCausation() {
	f.So(f.handle(nil, request("a", nil, "replies-a")), should.BeNil)
	f.So(f.writer.written, should.HaveLength, 1)
	reply := f.writer.written[0]
	f.So(reply.Topic, should.BeEmpty)
	f.So(reply.RoutingKey, should.Equal, "replies-a")
	f.So(reply.Mandatory, should.BeFalse)
	f.So(reply.CorrelationID, should.Equal, "corr-a")
	f.So(reply.CausationID, should.Equal, "a")
	f.So(string(reply.Payload), should.Equal, `{"sku":"a","cents":7}`)
	f.So(reply.Headers, should.NotContainKey, HeaderError)
	f.So(f.settler.order, should.BeEmpty) // accepted with its batch
	f.So(f.handler.Answered(), should.Equal, 1)
	f.So(f.monitor.count("replied"), should.Equal, 1)
}

func (f *ResponderFixture) TestTheHeaderWinsOverTheProperty() {
	f.So(f.handle(nil, request("a", map[string]any{HeaderReplyTo: []byte("from-header")}, "from-property")), should.BeNil)
	f.So(f.writer.written[0].RoutingKey, should.Equal, "from-header")
}

func (f *ResponderFixture) TestAnErrorGoesBackAsAnEmptyReplyThenTheRequestIsRejected() {
	f.failWith = errors.New("no such product")
	f.So(f.handle(nil, request("a", nil, "replies")), should.BeNil)
	f.So(f.writer.written, should.HaveLength, 1)
	f.So(f.writer.written[0].Headers[HeaderError], should.Equal, "no such product")
	f.So(string(f.writer.written[0].Payload), should.Equal, `{"sku":"","cents":0}`)
	f.So(f.settler.order, should.Equal, []string{"rejected a"})
	f.So(messaging.IsFatal(f.settler.decisions["a"].Reason), should.BeTrue)
}

func (f *ResponderFixture) TestARequestThatDoesNotDecodeIsAnsweredWithTheErrorAndRejected() {
	bad := request("a", nil, "replies")
	bad.Payload = []byte("not json")
	f.So(f.handle(nil, bad), should.BeNil)
	f.So(f.calls, should.BeEmpty)
	f.So(f.writer.written[0].Headers[HeaderError], should.ContainSubstring, "the request does not decode")
	f.So(f.settler.order, should.Equal, []string{"rejected a"})
}

func (f *ResponderFixture) TestARequestWithNoReplyAddressIsRejectedFatallyAndCounted() {
	f.So(f.handle(nil, request("a", nil, "")), should.BeNil)
	f.So(f.calls, should.BeEmpty)
	f.So(f.writer.written, should.BeEmpty)
	f.So(f.settler.order, should.Equal, []string{"rejected a"})
	reason := f.settler.decisions["a"].Reason
	f.So(messaging.IsFatal(reason), should.BeTrue)
	f.So(errors.Is(reason, ErrUnanswerable), should.BeTrue)
	f.So(reason.Error(), should.Equal, "acemq: request a carries neither a acemq-reply-to header nor a reply-to property, so there is nowhere to reply")
	f.So(f.handler.Unanswerable(), should.Equal, 1)
	f.So(f.monitor.count("unanswerable"), should.Equal, 1)
}

func (f *ResponderFixture) TestAReplyThatCannotBePublishedIsRetriedAndNotCounted() {
	var countedDuring uint64
	f.writer.during = func() { countedDuring = f.handler.Answered() }
	f.writer.err = messaging.ErrPublishingPaused
	f.So(f.handle(nil, request("a", nil, "replies")), should.BeNil)
	f.So(countedDuring, should.Equal, 1) // counted before the publish
	f.So(f.handler.Answered(), should.Equal, 0)
	f.So(f.monitor.count("replied"), should.Equal, 0)
	f.So(f.settler.order, should.Equal, []string{"retried a"})
	f.So(errors.Is(f.settler.decisions["a"].Reason, messaging.ErrPublishingPaused), should.BeTrue)
}

func (f *ResponderFixture) TestAnErrorReplyThatCannotBePublishedIsRetriedNotRejected() {
	f.failWith = errors.New("no such product")
	f.writer.err = errors.New("broker away")
	f.So(f.handle(nil, request("a", nil, "replies")), should.BeNil)
	f.So(f.settler.order, should.Equal, []string{"retried a"})
}

func (f *ResponderFixture) TestABatchRunAgainDoesNotPublishAReplyTwice() {
	ctx := messaging.WithHopRecord(context.Background())
	batch := []messaging.Delivery{request("a", nil, "r"), request("b", nil, "r")}
	f.So(f.handle(ctx, batch...), should.BeNil)
	f.So(f.handle(ctx, batch...), should.BeNil)
	f.So(f.writer.written, should.HaveLength, 2)
}

func (f *ResponderFixture) TestDecodedMessagesTakeTheirEnvelopesFromTheContext() {
	d := request("a", nil, "replies")
	ctx := messaging.WithSettler(messaging.WithDeliveries(context.Background(), []messaging.Delivery{d}), f.settler)
	f.handler.Handle(ctx, priceRequest{SKU: "decoded"})
	f.So(f.calls, should.Equal, []string{"decoded"})
	f.So(f.writer.written[0].RoutingKey, should.Equal, "replies")
}

func (f *ResponderFixture) TestAMessageWithoutItsEnvelopePanicsWithWhatToDo() {
	defer func() {
		f.So(recover(), should.NotBeNil)
	}()
	f.handler.Handle(context.Background(), priceRequest{SKU: "x"})
}

// FuzzResponderAnswersAnyRequest hands the responder arbitrary payloads and
// reply addresses (in the header as bytes, or the property): it never
// panics, and each request is either answered or rejected.
func FuzzResponderAnswersAnyRequest(f *testing.F) {
	f.Add([]byte(`{"sku":"a"}`), []byte("replies"), "")
	f.Add([]byte(`not json`), []byte(""), "property")
	f.Add([]byte(`{"sku":`), []byte{0xff, 0x00}, "")
	f.Add([]byte(nil), []byte(nil), "")
	f.Fuzz(func(t *testing.T, payload, header []byte, property string) {
		writer, settler := &fakeWriter{}, newFakeSettler()
		handler := NewHandler(writer, price)
		d := messaging.Delivery{MessageID: "m", CorrelationID: "c", ReplyTo: property, Payload: payload, Headers: map[string]any{HeaderReplyTo: header}}
		ctx := messaging.WithSettler(messaging.WithDeliveries(context.Background(), []messaging.Delivery{d}), settler)
		handler.Handle(ctx, d)
		_, settled := settler.decisions["m"]
		if len(writer.written) == 0 && !settled {
			t.Fatalf("request neither answered nor settled")
		}
		if len(header) == 0 && property == "" && settler.decisions["m"].Verdict != messaging.Rejected {
			t.Fatalf("a request with no address was not rejected: %v", settler.decisions["m"])
		}
	})
}
