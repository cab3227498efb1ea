package wire

import (
	"errors"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestCheckFixture(t *testing.T) {
	gunit.Run(new(CheckFixture), t)
}

type CheckFixture struct {
	*gunit.Fixture
}

// field returns the FieldError of err, failing the test when it is not one.
func (f *CheckFixture) field(err error) messaging.FieldError {
	var field *messaging.FieldError
	if !errors.As(err, &field) {
		f.Errorf("%v is not a *messaging.FieldError", err)
		return messaging.FieldError{}
	}
	f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
	return *field
}

// shortStrings sets each short-string field of a dispatch, by its name in a
// FieldError.
var shortStrings = map[string]func(*messaging.Dispatch, string){
	"Topic (exchange)": func(d *messaging.Dispatch, v string) { d.Topic = v },
	"RoutingKey":       func(d *messaging.Dispatch, v string) { d.RoutingKey = v },
	"MessageID":        func(d *messaging.Dispatch, v string) { d.MessageID = v },
	"CorrelationID":    func(d *messaging.Dispatch, v string) { d.CorrelationID = v },
	"MessageType":      func(d *messaging.Dispatch, v string) { d.MessageType = v },
	"ReplyTo":          func(d *messaging.Dispatch, v string) { d.ReplyTo = v },
	"ContentType":      func(d *messaging.Dispatch, v string) { d.ContentType = v },
	"ContentEncoding":  func(d *messaging.Dispatch, v string) { d.ContentEncoding = v },
}

func (f *CheckFixture) TestEveryShortStringFitsAt255BytesAndIsRefusedAt256() {
	for name, set := range shortStrings {
		var fits, over messaging.Dispatch
		set(&fits, strings.Repeat("a", 255))
		set(&over, strings.Repeat("a", 256))

		f.So(Check(fits, 0), should.BeNil)
		got := f.field(Check(over, 0))
		f.So(got.Field, should.Equal, name)
		f.So(got.Size, should.Equal, 256)
		f.So(got.Limit, should.Equal, MaxShortString)
	}
}

func (f *CheckFixture) TestBytesAreCountedNotRunes() {
	got := f.field(Check(messaging.Dispatch{MessageID: strings.Repeat("€", 100)}, 0))

	f.So(got.Size, should.Equal, 300)
	f.So(got.MessageID, should.Equal, Shorten(strings.Repeat("€", 100)))
	f.So(got.Error(), should.ContainSubstring, "MessageID is 300 bytes and AMQP carries at most 255")
}

func (f *CheckFixture) TestAVerbatimCopyMayCarryAnOverLongIDCorrelationAndTypeButNothingElse() {
	long := strings.Repeat("a", 300)
	f.So(Check(messaging.Dispatch{Verbatim: true, MessageID: long, CorrelationID: long, MessageType: long}, 0), should.BeNil)
	for _, name := range []string{"Topic (exchange)", "RoutingKey", "ReplyTo", "ContentType", "ContentEncoding"} {
		d := messaging.Dispatch{Verbatim: true}
		shortStrings[name](&d, long)
		f.So(f.field(Check(d, 0)).Field, should.Equal, name)
	}
	f.So(f.field(Check(messaging.Dispatch{MessageID: long}, 0)).Field, should.Equal, "MessageID")
}

func (f *CheckFixture) TestThePayloadIsBoundedByTheGivenMaximumOrTheDefault() {
	f.So(Check(messaging.Dispatch{Payload: make([]byte, 10)}, 10), should.BeNil)
	f.So(f.field(Check(messaging.Dispatch{Payload: make([]byte, 11)}, 10)), should.Resemble,
		messaging.FieldError{Field: "Payload", Size: 11, Limit: 10})
	f.So(Check(messaging.Dispatch{Payload: make([]byte, 11)}, 0), should.BeNil)
	f.So(Check(messaging.Dispatch{Payload: make([]byte, 11)}, -1), should.BeNil)
}

func (f *CheckFixture) TestAnExpirationPastTheBrokersLargestTTLIsRefused() {
	f.So(Check(messaging.Dispatch{Expiration: time.Duration(1<<32-1) * time.Millisecond}, 0), should.BeNil)
	got := f.field(Check(messaging.Dispatch{Expiration: time.Duration(1<<32) * time.Millisecond}, 0))
	f.So(got.Field, should.Equal, "Expiration")
	f.So(got.Problem, should.ContainSubstring, "largest per-message TTL")
}

func (f *CheckFixture) TestAHeaderNameFitsAt255BytesAndIsRefusedAt256() {
	f.So(Check(messaging.Dispatch{Headers: map[string]any{strings.Repeat("h", 255): 1}}, 0), should.BeNil)
	got := f.field(Check(messaging.Dispatch{Headers: map[string]any{strings.Repeat("h", 256): 1}}, 0))
	f.So(got.Field, should.StartWith, "header name")
	f.So(got.Size, should.Equal, 256)
	f.So(got.Limit, should.Equal, MaxShortString)
}

func (f *CheckFixture) TestEveryHeaderTypeAnAMQPTableCarriesIsAccepted() {
	headers := map[string]any{
		"nil": nil, "bool": true, "byte": byte(1), "int8": int8(1), "int16": int16(1), "uint16": uint16(1),
		"int32": int32(1), "uint32": uint32(1), "float32": float32(1), "int": 1, "int64": int64(1),
		"float64": 1.5, "time": time.Now(), "decimal": amqp.Decimal{Scale: 2, Value: 5}, "string": "s",
		"bytes": []byte("b"), "array": []any{1, "two", []any{3}}, "table": amqp.Table{"k": "v"},
		"map": map[string]any{"k": map[string]any{"deeper": []any{amqp.Table{"x": 1}}}},
	}
	f.So(Check(messaging.Dispatch{Headers: headers}, 0), should.BeNil)
	f.So(amqp.Table(map[string]any{"sample": headers["table"]}).Validate(), should.BeNil)
}

func (f *CheckFixture) TestAHeaderValueATableCannotCarryIsRefusedNamingTheHeader() {
	for _, value := range []any{uint64(1), uint(1), struct{}{}, []string{"x"}, map[string]string{"k": "v"}, make(chan int),
		[]any{complex(1, 2)}, map[string]any{"k": struct{}{}}, amqp.Table{"k": []int{1}}} {
		got := f.field(Check(messaging.Dispatch{Headers: map[string]any{"x-odd": value}}, 0))
		f.So(got.Field, should.Equal, `header "x-odd"`)
		f.So(got.Problem, should.ContainSubstring, "which an AMQP table cannot carry")
		f.So(got.Size, should.Equal, 0)
	}
}

func (f *CheckFixture) TestANestedFieldNameOver255BytesIsRefused() {
	got := f.field(Check(messaging.Dispatch{Headers: map[string]any{"x-t": map[string]any{strings.Repeat("n", 256): 1}}}, 0))
	f.So(got.Problem, should.ContainSubstring, "nested field name of 256 bytes")
}

func (f *CheckFixture) TestNestingIsBounded() {
	nest := func(levels int) any {
		var value any = "leaf"
		for range levels {
			value = map[string]any{"k": value}
		}
		return value
	}
	f.So(Check(messaging.Dispatch{Headers: map[string]any{"x": nest(MaxHeaderDepth)}}, 0), should.BeNil)
	got := f.field(Check(messaging.Dispatch{Headers: map[string]any{"x": nest(MaxHeaderDepth + 2)}}, 0))
	f.So(got.Problem, should.ContainSubstring, "nested deeper than")

	cycle := []any{nil}
	cycle[0] = cycle
	f.So(f.field(Check(messaging.Dispatch{Headers: map[string]any{"x": cycle}}, 0)).Problem, should.ContainSubstring, "nested deeper than")
}

func (f *CheckFixture) TestTheHeaderBlockIsBoundedAsAWhole() {
	f.So(Check(messaging.Dispatch{Headers: map[string]any{"x-big": strings.Repeat("v", 90<<10)}}, 0), should.BeNil)
	got := f.field(Check(messaging.Dispatch{Headers: map[string]any{"x-big": strings.Repeat("v", MaxHeaderBlock)}}, 0))
	f.So(got.Field, should.Equal, "the headers and envelope together")
	f.So(got.Limit, should.Equal, MaxHeaderBlock)

	many := map[string]any{}
	for i := range 500 {
		many[strings.Repeat("h", 200)+string(rune('a'+i%26))+strings.Repeat("i", i%50)+string(rune(i))] = strings.Repeat("v", 200)
	}
	f.So(f.field(Check(messaging.Dispatch{Headers: many}, 0)).Field, should.Equal, "the headers and envelope together")

	f.So(f.field(Check(messaging.Dispatch{Verbatim: true, Error: strings.Repeat("e", MaxHeaderBlock/2)}, 0)).Field,
		should.Equal, "the headers and envelope together")
}

func (f *CheckFixture) TestAReservedHeaderIsRefusedInAnyCaseAndMatchesErrWireLimit() {
	for _, name := range []string{"x-acemq-id", "X-ACEMQ-TYPE", "x-AceMQ-anything"} {
		err := Check(messaging.Dispatch{Headers: map[string]any{name: "v"}}, 0)
		f.So(err.Error(), should.Equal, `acemq: header "`+name+`" is in the reserved "x-acemq-" namespace and would be dropped on consume; use a namespace of your own, such as x-yourcompany-`)
		f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
	}
	f.So(IsReserved("x-acemq"), should.BeFalse)
	f.So(IsReserved("x-acemqx"), should.BeFalse)
	f.So(IsReserved("x-acme-id"), should.BeFalse)
	f.So(IsReserved("X-Acemq-"), should.BeTrue)
}

func (f *CheckFixture) TestAnEmptyDispatchFits() {
	f.So(Check(messaging.Dispatch{}, 0), should.BeNil)
}

func (f *CheckFixture) TestShortenCutsOnARuneBoundaryAndSaysHowLong() {
	f.So(Shorten("short"), should.Equal, "short")
	f.So(Shorten(strings.Repeat("a", 64)), should.Equal, strings.Repeat("a", 64))
	f.So(Shorten(strings.Repeat("a", 65)), should.Equal, strings.Repeat("a", 64)+"…(65 bytes)")
	f.So(Shorten(strings.Repeat("€", 30)), should.Equal, strings.Repeat("€", 21)+"…(90 bytes)")
}

func (f *CheckFixture) TestCutKeepsWholeRunesWithinTheLimit() {
	f.So(Cut("short", 10), should.Equal, "short")
	f.So(Cut("exactly", 7), should.Equal, "exactly")
	f.So(Cut(strings.Repeat("€", 3), 8), should.Equal, strings.Repeat("€", 2)) // 9 bytes; a third € would need 9
	f.So(Cut("€", 2), should.Equal, "")
	f.So(Cut(strings.Repeat("a", 300), MaxShortString), should.Equal, strings.Repeat("a", MaxShortString))
}

func (f *CheckFixture) TestFitsProperty() {
	f.So(FitsProperty(strings.Repeat("a", 255)), should.BeTrue)
	f.So(FitsProperty(strings.Repeat("a", 256)), should.BeFalse)
}

// FuzzCheck never panics, and what it accepts fits the wire: every short
// string that is not a Verbatim allowance within 255 bytes, no reserved header,
// and headers that amqp091 encodes once nested maps are tables.
func FuzzCheck(f *testing.F) {
	f.Add("id", "key", "x-h", []byte("v"), uint8(0), false, 0)
	f.Add(strings.Repeat("€", 100), "", "x-acemq-id", []byte{}, uint8(3), true, 10)
	f.Add("", strings.Repeat("k", 256), strings.Repeat("h", 256), []byte("\x00\xff"), uint8(7), false, -5)
	f.Fuzz(func(t *testing.T, id, key, header string, value []byte, kind uint8, verbatim bool, maxPayload int) {
		headerValue := fuzzValue(kind, value, 0)
		d := messaging.Dispatch{MessageID: id, RoutingKey: key, CorrelationID: key, ContentType: id, Verbatim: verbatim,
			Headers: map[string]any{header: headerValue}, Payload: value}
		err := Check(d, maxPayload)
		if err != nil {
			if !errors.Is(err, messaging.ErrWireLimit) {
				t.Fatalf("Check refused with %v, which does not match ErrWireLimit", err)
			}
			_ = err.Error()
			return
		}
		if len(key) > MaxShortString || len(id) > MaxShortString || len(header) > MaxShortString || IsReserved(header) {
			t.Fatalf("Check accepted id %d bytes, key %d bytes, header %q", len(id), len(key), Shorten(header))
		}
		if err := amqp.Table(map[string]any{header: asTable(headerValue)}).Validate(); err != nil {
			t.Fatalf("Check accepted a header amqp091 refuses: %v", err)
		}
	})
}

// fuzzValue turns bytes into a header value whose type the kind picks.
func fuzzValue(kind uint8, data []byte, depth int) any {
	switch kind % 12 {
	case 0:
		return string(data)
	case 1:
		return data
	case 2:
		return int64(len(data))
	case 3:
		return uint64(len(data)) // not carried
	case 4:
		return nil
	case 5:
		return len(data) > 0
	case 6:
		return time.Unix(int64(len(data)), 0)
	case 7:
		if depth > 3 || len(data) == 0 {
			return []any{}
		}
		return []any{fuzzValue(data[0], data[1:], depth+1)}
	case 8:
		if depth > 3 || len(data) == 0 {
			return map[string]any{}
		}
		return map[string]any{string(data[1:]): fuzzValue(data[0], data[1:], depth+1)}
	case 9:
		return []string{string(data)} // not carried
	case 10:
		return float32(len(data))
	default:
		return amqp.Decimal{Scale: uint8(len(data)), Value: int32(len(data))}
	}
}

// asTable turns nested maps into amqp.Tables, as the transport does.
func asTable(value any) any {
	switch v := value.(type) {
	case map[string]any:
		table := amqp.Table{}
		for k, item := range v {
			table[k] = asTable(item)
		}
		return table
	case []any:
		items := make([]any, len(v))
		for i, item := range v {
			items[i] = asTable(item)
		}
		return items
	}
	return value
}
