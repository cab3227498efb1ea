package rabbitmq

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/transporttest"
	"github.com/warrenmq/messaging/internal/wire"
)

func TestEnvelopeFixture(t *testing.T) {
	gunit.Run(new(EnvelopeFixture), t)
}

type EnvelopeFixture struct {
	*gunit.Fixture
	now time.Time
}

func (f *EnvelopeFixture) Setup() {
	f.now = time.UnixMilli(1_700_000_000_123).UTC()
}

// encodeAt encodes d alone, as a write of one dispatch at now does.
func encodeAt(d messaging.Dispatch, now time.Time, origin string) (outgoing, error) {
	encoder := wire.NewEncoder(now, origin)
	return encodeDispatch(d, &encoder, 0)
}

func (f *EnvelopeFixture) encode(d messaging.Dispatch) outgoing {
	out, err := encodeAt(d, f.now, "svc@host")
	f.So(err, should.BeNil)
	return out
}

func (f *EnvelopeFixture) TestAFullDispatchIsWrittenExactly() {
	out := f.encode(messaging.Dispatch{
		Topic: "events", RoutingKey: "order.placed", MessageID: "id-1", CorrelationID: "corr-1",
		CausationID: "cause-1", ReplyTo: "replies", MessageType: "order-placed", Version: 2,
		ContentType: "application/json", ContentEncoding: "gzip", Attempt: 3,
		FirstSeen: time.UnixMilli(1_600_000_000_000), Origin: "orders@box", Error: "boom", Claim: "claim-1",
		Route: []string{"a", "b"}, RoutePosition: 1, RouteID: "route-1", Expiration: 90 * time.Second,
		Timestamp: time.Unix(1_650_000_000, 0), Mandatory: true, Headers: map[string]any{"x-app": "v"},
		Payload: []byte("body"),
	})

	f.So(out.id, should.Equal, "id-1")
	f.So(out.exchange, should.Equal, "events")
	f.So(out.key, should.Equal, "order.placed")
	f.So(out.mandatory, should.BeTrue)
	f.So(out.msg.Headers, should.Resemble, amqp.Table{
		"x-app":                  "v",
		"x-acemq-id":             "id-1",
		"x-acemq-type":           "order-placed",
		"x-acemq-version":        int32(2),
		"x-acemq-correlation":    "corr-1",
		"x-acemq-causation":      "cause-1",
		"x-acemq-attempt":        int32(3),
		"x-acemq-first-seen":     int64(1_600_000_000_000),
		"x-acemq-origin":         "orders@box",
		"x-acemq-error":          "boom",
		"x-acemq-claim":          "claim-1",
		"x-acemq-route":          "a,b",
		"x-acemq-route-position": int32(1),
		"x-acemq-route-id":       "route-1",
	})
	f.So(out.msg.MessageId, should.Equal, "id-1")
	f.So(out.msg.CorrelationId, should.Equal, "corr-1")
	f.So(out.msg.ReplyTo, should.Equal, "replies")
	f.So(out.msg.Type, should.Equal, "order-placed")
	f.So(out.msg.ContentType, should.Equal, "application/json")
	f.So(out.msg.ContentEncoding, should.Equal, "gzip")
	f.So(out.msg.Timestamp, should.Equal, time.Unix(1_650_000_000, 0))
	f.So(out.msg.DeliveryMode, should.Equal, amqp.Persistent)
	f.So(out.msg.Expiration, should.Equal, "90000")
	f.So(string(out.msg.Body), should.Equal, "body")
	f.So(out.msg.Headers.Validate(), should.BeNil)
}

func (f *EnvelopeFixture) TestAnEmptyDispatchGetsTheDefaultsAndNoEmptyHeaders() {
	out := f.encode(messaging.Dispatch{RoutingKey: "orders", Transient: true})

	f.So(slices.Sorted(maps.Keys(out.msg.Headers)), should.Resemble, []string{
		"x-acemq-attempt", "x-acemq-correlation", "x-acemq-first-seen", "x-acemq-id",
		"x-acemq-origin", "x-acemq-type", "x-acemq-version",
	})
	f.So(out.id, should.HaveLength, 36)
	f.So(out.msg.MessageId, should.Equal, out.id)
	f.So(out.msg.CorrelationId, should.Equal, out.id)
	f.So(out.msg.Headers["x-acemq-correlation"], should.Equal, out.id)
	f.So(out.msg.Headers["x-acemq-type"], should.Equal, "orders")
	f.So(out.msg.Type, should.BeEmpty)
	f.So(out.msg.Headers["x-acemq-version"], should.Equal, int32(1))
	f.So(out.msg.Headers["x-acemq-attempt"], should.Equal, int32(1))
	f.So(out.msg.Headers["x-acemq-first-seen"], should.Equal, f.now.UnixMilli())
	f.So(out.msg.Headers["x-acemq-origin"], should.Equal, "svc@host")
	f.So(out.msg.Timestamp, should.Equal, f.now)
	f.So(out.msg.DeliveryMode, should.Equal, amqp.Transient)
	f.So(out.msg.Expiration, should.BeEmpty)
}

func (f *EnvelopeFixture) TestNoTypeIsWrittenWithoutTypeOrRoutingKey() {
	out := f.encode(messaging.Dispatch{})

	_, ok := out.msg.Headers["x-acemq-type"]
	f.So(ok, should.BeFalse)
}

func (f *EnvelopeFixture) TestRouteIDIsOmittedWhenEmptyButPositionIsAlwaysWrittenWithARoute() {
	out := f.encode(messaging.Dispatch{Route: []string{"only"}})

	f.So(out.msg.Headers["x-acemq-route"], should.Equal, "only")
	f.So(out.msg.Headers["x-acemq-route-position"], should.Equal, int32(0))
	_, ok := out.msg.Headers["x-acemq-route-id"]
	f.So(ok, should.BeFalse)
}

func (f *EnvelopeFixture) TestHugeCountsAreClampedToTheWireWidth() {
	out := f.encode(messaging.Dispatch{Version: math.MaxInt64, Attempt: -4})

	f.So(out.msg.Headers["x-acemq-version"], should.Equal, int32(math.MaxInt32))
	f.So(out.msg.Headers["x-acemq-attempt"], should.Equal, int32(1))
}

func (f *EnvelopeFixture) TestAReservedHeaderIsRefusedInAnyCase() {
	for _, name := range []string{"x-acemq-id", "X-AceMQ-Custom"} {
		_, err := encodeAt(messaging.Dispatch{Headers: map[string]any{name: "v"}}, f.now, "")
		f.So(err.Error(), should.Equal, `acemq: header "`+name+`" is in the reserved "x-acemq-" namespace and would be dropped on consume; use a namespace of your own, such as x-yourcompany-`)
	}
}

func (f *EnvelopeFixture) TestAHeaderValueAMQPCannotCarryIsRefused() {
	_, err := encodeAt(messaging.Dispatch{Headers: map[string]any{"x-app": struct{}{}}}, f.now, "")

	f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "which an AMQP table cannot carry")
}

func (f *EnvelopeFixture) TestAVerbatimCopysOverLongIDTravelsInItsHeaderAloneAndIsReadBackWhole() {
	long := strings.Repeat("i", 300)
	out := f.encode(messaging.Dispatch{RoutingKey: "q", MessageID: long, CorrelationID: long, MessageType: long, Verbatim: true})

	f.So(out.msg.MessageId, should.BeEmpty)
	f.So(out.msg.CorrelationId, should.BeEmpty)
	f.So(out.msg.Type, should.BeEmpty)
	f.So(out.msg.Headers["x-acemq-id"], should.Equal, long)
	f.So(out.msg.Headers["x-acemq-correlation"], should.Equal, long)
	f.So(out.msg.Headers["x-acemq-type"], should.Equal, long)

	var got messaging.Delivery
	decodeDelivery(amqp.Delivery{Headers: out.msg.Headers, MessageId: out.msg.MessageId, CorrelationId: out.msg.CorrelationId, Type: out.msg.Type}, "q", &got)
	f.So(got.MessageID, should.Equal, long)
	f.So(got.CorrelationID, should.Equal, long)
	f.So(got.MessageType, should.Equal, long)
}

func (f *EnvelopeFixture) TestTheSameOverLongIDIsRefusedWhenNotVerbatim() {
	_, err := encodeAt(messaging.Dispatch{MessageID: strings.Repeat("i", 300)}, f.now, "")

	var field *messaging.FieldError
	f.So(errors.As(err, &field), should.BeTrue)
	f.So(field.Field, should.Equal, "MessageID")
	f.So(field.Limit, should.Equal, 255)
}

func (f *EnvelopeFixture) TestTheDecoderReadsWhatTheEncoderWrote() {
	sent := messaging.Dispatch{RoutingKey: "k", Headers: map[string]any{"x-app": "v"}}
	sent.SetEnvelope(messaging.Envelope{
		MessageID: "id-1", CorrelationID: "c", CausationID: "x", ReplyTo: "replies", MessageType: "t", Version: 4,
		ContentType: "application/json", ContentEncoding: "gzip", Attempt: 2,
		FirstSeen: time.UnixMilli(1_600_000_000_000).UTC(), Origin: "o@h", Error: "e", Claim: "cl",
		Route: []string{"a", "b", "c"}, RoutePosition: 2, RouteID: "r", Expiration: time.Second,
		Timestamp: time.Unix(1_650_000_000, 0),
	})
	f.So(transporttest.UnsetEnvelopeFields(sent.Envelope()), should.BeEmpty)
	out := f.encode(sent)
	var got messaging.Delivery

	decodeDelivery(amqp.Delivery{
		Headers: out.msg.Headers, MessageId: out.msg.MessageId, CorrelationId: out.msg.CorrelationId,
		Type: out.msg.Type, Expiration: out.msg.Expiration, DeliveryMode: out.msg.DeliveryMode, RoutingKey: "k",
		ReplyTo: out.msg.ReplyTo, ContentType: out.msg.ContentType, ContentEncoding: out.msg.ContentEncoding,
		Timestamp: out.msg.Timestamp,
	}, "q", &got)

	f.So(transporttest.EnvelopeDifferences(got.Envelope(), sent.Envelope()), should.BeEmpty)
	f.So(got.Durable, should.BeTrue)
	f.So(got.Headers, should.Resemble, map[string]any{"x-app": "v"})
	f.So(got.SourceQueue, should.Equal, "q")
}

func (f *EnvelopeFixture) TestReadingFallsBackFromHeaderToPropertyToDefault() {
	var got messaging.Delivery

	decodeDelivery(amqp.Delivery{MessageId: "prop-id", Type: "prop-type", RoutingKey: "key"}, "q", &got)
	f.So(got.MessageID, should.Equal, "prop-id")
	f.So(got.MessageType, should.Equal, "prop-type")
	f.So(got.CorrelationID, should.Equal, "prop-id")
	f.So(got.Version, should.Equal, 1)
	f.So(got.Attempt, should.Equal, 1)
	f.So(got.Headers, should.BeNil)

	decodeDelivery(amqp.Delivery{RoutingKey: "key", Headers: amqp.Table{"x-acemq-version": int32(0)}}, "q", &got)
	f.So(got.MessageID, should.HaveLength, 36)
	f.So(got.CorrelationID, should.Equal, got.MessageID)
	f.So(got.MessageType, should.Equal, "key")
	f.So(got.Version, should.Equal, 1)
	f.So(got.FirstSeen.IsZero(), should.BeTrue)
}

func (f *EnvelopeFixture) TestReadingIsTolerantOfHowValuesWereEncoded() {
	var got messaging.Delivery
	for _, value := range []any{int8(5), int16(5), int32(5), int64(5), uint8(5), uint16(5), uint32(5), 5.0, float32(5), "5", []byte("5"), " 5 ", "5.0"} {
		decodeDelivery(amqp.Delivery{Headers: amqp.Table{"x-acemq-attempt": value, "x-acemq-id": []byte("bytes-id")}}, "q", &got)
		f.So(got.Attempt, should.Equal, 5)
		f.So(got.MessageID, should.Equal, "bytes-id")
	}
	for _, value := range []any{"five", math.NaN(), math.Inf(1), true, nil, amqp.Table{}, uint64(math.MaxUint64)} {
		decodeDelivery(amqp.Delivery{Headers: amqp.Table{"x-acemq-attempt": value}}, "q", &got)
		f.So(got.Attempt, should.Equal, 1)
	}
}

func (f *EnvelopeFixture) TestEveryReservedHeaderIsStrippedKnownOrNot() {
	var got messaging.Delivery

	decodeDelivery(amqp.Delivery{Headers: amqp.Table{
		"x-acemq-id": "i", "x-acemq-future": "f", "X-ACEMQ-SHOUT": "s", "x-stream-offset": int64(4), "traceparent": "t",
	}}, "q", &got)

	f.So(got.Headers, should.Resemble, map[string]any{"x-stream-offset": int64(4), "traceparent": "t"})
}

// FuzzDecodeDelivery feeds the decoder header tables built from arbitrary bytes:
// it must never panic, and its invariants must hold for any input.
func FuzzDecodeDelivery(f *testing.F) {
	f.Add([]byte("x-acemq-attempt\x00\x05"), "1000", "id")
	f.Add([]byte("x-acemq-version\x01abc\x00x-acemq-route\x02a,b,c"), "-5", "")
	f.Add([]byte("x-acemq-first-seen\x03\xff\xff\xff\xff\xff\xff\xff\x7f"), "99999999999999999999", "")
	f.Add([]byte("x-acemq-route-position\x04\x00\x00\x00\x00\x00\x00\xf0\x7f"), "1e3", "m")
	f.Fuzz(func(t *testing.T, table []byte, expiration, messageID string) {
		headers := fuzzTable(table)
		var got messaging.Delivery

		decodeDelivery(amqp.Delivery{Headers: headers, Expiration: expiration, MessageId: messageID, RoutingKey: "k"}, "q", &got)

		if got.Version < 1 || got.Attempt < 1 || got.RoutePosition < 0 || got.Expiration < 0 {
			t.Fatalf("version %d, attempt %d, position %d, expiration %s", got.Version, got.Attempt, got.RoutePosition, got.Expiration)
		}
		if got.MessageID == "" || got.CorrelationID == "" || got.MessageType == "" {
			t.Fatalf("id %q, correlation %q, type %q", got.MessageID, got.CorrelationID, got.MessageType)
		}
		for name := range got.Headers {
			if wire.IsReserved(name) {
				t.Fatalf("reserved header %q reached the application", name)
			}
		}
	})
}

// fuzzTable turns bytes into a header table: segments separated by NUL are
// "name<kind byte>value", and the kind byte picks the value's Go type.
func fuzzTable(data []byte) amqp.Table {
	table := amqp.Table{}
	for segment := range slicesSplit(data) {
		if len(segment) == 0 {
			continue
		}
		cut := len(segment) / 2
		for i, b := range segment {
			if b < 8 {
				cut = i
				break
			}
		}
		name := string(segment[:cut])
		kind := byte(0)
		var raw []byte
		if cut < len(segment) {
			kind, raw = segment[cut], segment[cut+1:]
		}
		table[name] = fuzzValue(kind, raw)
	}
	return table
}

func slicesSplit(data []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		start := 0
		for i, b := range data {
			if b == 0 {
				if !yield(data[start:i]) {
					return
				}
				start = i + 1
			}
		}
		yield(data[start:])
	}
}

func fuzzValue(kind byte, raw []byte) any {
	var n uint64
	for _, b := range raw {
		n = n<<8 | uint64(b)
	}
	switch kind % 8 {
	case 0:
		return int32(n)
	case 1:
		return string(raw)
	case 2:
		return raw
	case 3:
		return int64(n)
	case 4:
		return math.Float64frombits(n)
	case 5:
		return uint8(n)
	case 6:
		return []any{string(raw), int16(n)}
	default:
		return amqp.Table{string(raw): n}
	}
}
