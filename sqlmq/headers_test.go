package sqlmq

import (
	"math"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestHeadersFixture(t *testing.T) {
	gunit.Run(new(HeadersFixture), t)
}

type HeadersFixture struct {
	*gunit.Fixture
}

func (f *HeadersFixture) TestEveryAMQPTypeSurvivesStorageWithItsGoType() {
	original := map[string]any{
		"s": "text", "b": false, "i": int(-1), "i8": int8(-8), "i16": int16(-16), "i32": int32(-32), "i64": int64(math.MinInt64),
		"u8": uint8(8), "u16": uint16(16), "u32": uint32(32),
		"f32": float32(1.5), "f64": math.Inf(-1), "bytes": []byte("raw"), "nil": nil,
		"time": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "decimal": amqp.Decimal{Scale: 2, Value: 12345},
		"table": amqp.Table{"x": int64(1)}, "array": []any{int32(1), "two", []any{true}},
	}
	text, ok, err := encodeHeaders(original)
	f.So(err, should.BeNil)
	f.So(ok, should.BeTrue)
	decoded, err := decodeHeaders(text, ok)
	f.So(err, should.BeNil)
	f.So(decoded, should.Resemble, original)
	f.So(amqp.Table(decoded).Validate(), should.BeNil)
}

func (f *HeadersFixture) TestANestedMapIsStoredAsTheAMQPTableItMustTravelAs() {
	text, ok, err := encodeHeaders(map[string]any{"map": map[string]any{"y": "z"}})
	f.So(err, should.BeNil)
	decoded, _ := decodeHeaders(text, ok)
	f.So(decoded["map"], should.Resemble, amqp.Table{"y": "z"})
}

func (f *HeadersFixture) TestNilHeadersAreStoredAsNullAndEmptyOnesStayEmpty() {
	_, ok, err := encodeHeaders(nil)
	f.So(ok, should.BeFalse)
	f.So(err, should.BeNil)
	decoded, _ := decodeHeaders("", false)
	f.So(decoded, should.BeNil)
	text, ok, _ := encodeHeaders(map[string]any{})
	decoded, _ = decodeHeaders(text, ok)
	f.So(decoded, should.NotBeNil)
	f.So(decoded, should.BeEmpty)
}

func (f *HeadersFixture) TestAValueTheTransportCannotCarryIsRefusedAtWriteTime() {
	type count int // a named number: AMQP tables carry only the built-in types
	for _, bad := range []any{struct{}{}, uint(1), uint64(1), []string{"x"}, map[string]string{}, count(1)} {
		_, _, err := encodeHeaders(map[string]any{"bad": bad})
		f.So(err, should.NotBeNil)
		f.So(err.Error(), should.ContainSubstring, `header "bad"`)
	}
}

func (f *HeadersFixture) TestAReservedHeaderNameIsRefusedAtWriteTime() {
	_, _, err := encodeHeaders(map[string]any{"X-AceMQ-Id": "x"})
	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.ContainSubstring, "reserved")
}

func (f *HeadersFixture) TestMalformedStoredHeadersAreErrors() {
	for _, text := range []string{"", "null", "[]", `{"a":1}`, `{"a":{}}`, `{"a":{"i8":"300"}}`, `{"a":{"zz":1}}`, `{"a":{"s":"x","bool":true}}`, `{} {}`} {
		_, err := decodeHeaders(text, true)
		f.So(err, should.NotBeNil)
	}
}

func FuzzDecodeHeaders(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":{"s":"x"}}`, `{"a":{"array":[{"i64":"1"},{"map":{"b":{"nil":true}}}]}}`,
		`{"a":{"decimal":["2","5"]}}`, `{"a":{"time":"2026-01-02T03:04:05Z"}}`, `{"a":{"bytes":"AAE="}}`, `{"a":{"f32":"NaN"}}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		decoded, err := decodeHeaders(text, true)
		if err != nil {
			return
		}
		again, ok, err := encodeHeaders(decoded)
		if err != nil || !ok {
			t.Fatalf("decoded headers %#v do not encode again: %v", decoded, err)
		}
		if _, err := decodeHeaders(again, ok); err != nil {
			t.Fatalf("re-encoded headers %q do not decode: %v", again, err)
		}
	})
}
