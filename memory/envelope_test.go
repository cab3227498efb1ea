package memory

import (
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
)

func TestEnvelopeFixture(t *testing.T) {
	gunit.Run(new(EnvelopeFixture), t)
}

type EnvelopeFixture struct {
	*gunit.Fixture
	*world
}

func (f *EnvelopeFixture) Setup() {
	f.world = newWorld(f.Fixture)
	f.queue("a")
	f.queue("b")
	f.So(f.broker.DeclareExchange("events", KindFanout, true), should.BeNil)
	f.So(f.broker.Bind("a", "events", ""), should.BeNil)
	f.So(f.broker.Bind("b", "events", ""), should.BeNil)
}
func (f *EnvelopeFixture) Teardown() { f.world.close() }

func (f *EnvelopeFixture) pull(queue string) messaging.Delivery {
	d, ok := f.broker.Pull(queue)
	f.So(ok, should.BeTrue)
	return d
}

func (f *EnvelopeFixture) TestEmptyFieldsGetTheTransportsDefaults() {
	inBubble(f.T(), f, f.Setup, f.Teardown, f.emptyFieldsGetTheTransportsDefaults)
}

func (f *EnvelopeFixture) emptyFieldsGetTheTransportsDefaults() {
	pass(2*time.Second + 600*time.Millisecond + 700*time.Microsecond) // within f.ctx: now is 00:00:02.6007 on the bubble's clock
	now := time.Now().UTC()
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", RoutingKey: "order.placed", Message: "dropped"}), should.BeNil)
	d := f.pull("a")

	f.So(d.MessageID, should.HaveLength, 36)
	f.So(d.CorrelationID, should.Equal, d.MessageID)
	f.So(d.MessageType, should.Equal, "order.placed")
	f.So(d.Version, should.Equal, 1)
	f.So(d.Attempt, should.Equal, 1)
	f.So(d.Origin, should.Equal, "tests@here")
	f.So(d.FirstSeen, should.Equal, now.Truncate(time.Millisecond)) // the wire carries milliseconds
	f.So(d.Timestamp, should.Equal, now.Truncate(time.Second))      // AMQP carries seconds
	f.So(d.Durable, should.BeTrue)
	f.So(d.Message, should.BeNil)
	f.So(d.Headers, should.BeNil) // as the RabbitMQ transport gives it
	f.So(f.pull("b").MessageID, should.Equal, d.MessageID)
}

func (f *EnvelopeFixture) TestGivenFieldsArriveAsTheWireCarriesThem() {
	sent := messaging.Dispatch{
		Topic: "events", RoutingKey: "k", MessageID: "id", CorrelationID: "corr", CausationID: "cause",
		ReplyTo: "replies", MessageType: "t", Version: 2, ContentType: "application/json", ContentEncoding: "gzip",
		Attempt: 3, FirstSeen: time.Date(2025, 5, 6, 7, 8, 9, 123_456_789, time.FixedZone("X", 3600)),
		Origin: "svc@h", Error: "why", Claim: "c", Route: []string{"s1", "s2"}, RoutePosition: 1, RouteID: "r",
		Expiration: 1500*time.Millisecond + 700*time.Microsecond, Transient: true, Payload: []byte("p"),
	}
	f.So(f.broker.Publish(f.ctx, sent), should.BeNil)
	d := f.pull("a")

	f.So(d.Topic, should.Equal, "events")
	f.So(d.RoutingKey, should.Equal, "k")
	f.So(d.SourceQueue, should.Equal, "a")
	f.So([]string{d.MessageID, d.CorrelationID, d.CausationID, d.ReplyTo, d.MessageType, d.ContentType, d.ContentEncoding, d.Origin, d.Error, d.Claim, d.RouteID},
		should.Equal, []string{"id", "corr", "cause", "replies", "t", "application/json", "gzip", "svc@h", "why", "c", "r"})
	f.So([]int{d.Version, d.Attempt, d.RoutePosition}, should.Equal, []int{2, 3, 1})
	f.So(d.Route, should.Equal, []string{"s1", "s2"})
	f.So(d.FirstSeen.Equal(time.Date(2025, 5, 6, 6, 8, 9, 123_000_000, time.UTC)), should.BeTrue)
	f.So(d.Expiration, should.Equal, 1501*time.Millisecond) // rounded up, never down to 0
	f.So(d.Durable, should.BeFalse)
	f.So(string(d.Payload), should.Equal, "p")
}

func (f *EnvelopeFixture) TestReservedHeadersAreRefusedAsTheTransportRefusesThem() {
	for _, name := range []string{"x-acemq-id", "X-AceMQ-Other"} {
		err := f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", Headers: map[string]any{name: "spoof"}})
		f.So(err, errorContains, "reserved")
		f.So(err, errorContains, name)
	}
	f.So(f.broker.MessageCount("a"), should.Equal, 0)
}

func (f *EnvelopeFixture) TestHeaderValuesAnAMQPTableCannotCarryAreRefused() {
	for _, value := range []any{uint64(1), struct{}{}, []any{[]string{"x"}}, map[string]any{"k": struct{}{}}} {
		err := f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", Headers: map[string]any{"x-mine": value}})
		f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
		f.So(err, errorContains, "which an AMQP table cannot carry")
	}
	f.So(f.broker.MessageCount("a"), should.Equal, 0)
}

func (f *EnvelopeFixture) TestANestedMapHeaderArrivesAsATableAsOnRabbitMQ() {
	headers := map[string]any{"x-mine": map[string]any{"k": "v", "in": []any{map[string]any{"n": 1}}}}
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", Headers: headers}), should.BeNil)
	d, ok := f.broker.Pull("a")
	f.So(ok, should.BeTrue)
	f.So(d.Headers["x-mine"], should.Resemble, amqp.Table{"k": "v", "in": []any{amqp.Table{"n": int32(1)}}})
}

func (f *EnvelopeFixture) TestHeaderValuesArriveWithTheirWireTypes() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 999, time.UTC)
	headers := map[string]any{"int": 42, "int64": int64(7), "time": at, "nil": nil, "decimal": amqp.Decimal{Scale: 1, Value: 5}}
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", Headers: headers}), should.BeNil)
	d := f.pull("a")
	f.So(d.Headers["int"], should.Equal, int32(42))
	f.So(d.Headers["int64"], should.Equal, int64(7))
	f.So(d.Headers["time"].(time.Time).Equal(at.Truncate(time.Second)), should.BeTrue)
	f.So(d.Headers["nil"], should.BeNil)
	f.So(d.Headers["decimal"], should.Equal, amqp.Decimal{Scale: 1, Value: 5})
}

func (f *EnvelopeFixture) TestARouteTravelsCommaJoinedAndAnEmptyOneCarriesNoPosition() {
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", Route: []string{"a,b", "c"}, RoutePosition: -3}), should.BeNil)
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", RoutePosition: 2, RouteID: "r"}), should.BeNil)
	joined := f.pull("a")
	f.So(joined.Route, should.Equal, []string{"a", "b", "c"})
	f.So(joined.RoutePosition, should.Equal, 0)
	empty := f.pull("a")
	f.So(empty.Route, should.BeNil)
	f.So([]any{empty.RoutePosition, empty.RouteID}, should.Equal, []any{0, ""})
}

func (f *EnvelopeFixture) TestVersionAndAttemptAreAtLeastOne() {
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", Version: -2, Attempt: -1}), should.BeNil)
	d := f.pull("a")
	f.So([]int{d.Version, d.Attempt}, should.Equal, []int{1, 1})
}

func (f *EnvelopeFixture) TestHeadersAndPayloadAreCopiedDeeply() {
	nested := amqp.Table{"bytes": []byte("abc"), "list": []any{"x", []byte("y")}}
	headers := map[string]any{"nested": nested, "bytes": []byte("raw")}
	payload := []byte("body")
	route := []string{"one"}
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", Headers: headers, Payload: payload, Route: route}), should.BeNil)

	nested["bytes"].([]byte)[0] = 'X'
	nested["list"].([]any)[1].([]byte)[0] = 'Y'
	nested["added"] = "later"
	headers["bytes"].([]byte)[0] = 'R'
	payload[0] = 'B'
	route[0] = "changed"

	a := f.pull("a")
	f.So(a.Headers["nested"], should.Equal, amqp.Table{"bytes": []byte("abc"), "list": []any{"x", []byte("y")}})
	f.So(a.Headers["bytes"], should.Equal, []byte("raw"))
	f.So(string(a.Payload), should.Equal, "body")
	f.So(a.Route, should.Equal, []string{"one"})

	// One consumer changing its delivery does not change another queue's copy.
	a.Headers["nested"].(amqp.Table)["bytes"].([]byte)[0] = 'C'
	a.Headers["nested"].(amqp.Table)["list"].([]any)[0] = "changed"
	a.Payload[0] = 'C'
	b := f.pull("b")
	f.So(b.Headers["nested"], should.Equal, amqp.Table{"bytes": []byte("abc"), "list": []any{"x", []byte("y")}})
	f.So(string(b.Payload), should.Equal, "body")
}

func (f *EnvelopeFixture) TestARequeuedMessageKeepsItsEnvelope() {
	conn := f.connect()
	s, err := f.stream(conn, messaging.StreamConfig{StreamName: "a"})
	f.So(err, should.BeNil)
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "events", MessageID: "m", Attempt: 4}), should.BeNil)
	first := f.read(s)
	f.So(s.Close(), should.BeNil)

	again := f.pull("a")
	f.So(again.Redelivered, should.BeTrue)
	f.So(first.Redelivered, should.BeFalse)
	f.So([]any{again.MessageID, again.Attempt, again.FirstSeen}, should.Equal, []any{"m", 4, first.FirstSeen})
}
