package streams

import (
	"strings"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestTailFixture(t *testing.T) {
	gunit.Run(new(TailFixture), t)
}

type TailFixture struct {
	*gunit.Fixture
}

var tailNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func (f *TailFixture) TestOffsetsAreParsedAsOperatorsWriteThem() {
	for text, want := range map[string]any{
		"first": "first", "LAST": "last", " next ": "next", "41337": int64(41337), "0": int64(0),
		"2026-12-01T10:00:00Z": time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		"90m":                  tailNow.Add(-90 * time.Minute),
	} {
		offset, err := ParseOffset(text, tailNow)
		f.So(err, should.BeNil)
		f.So(offset.Argument(), should.Equal, want)
	}
	for _, text := range []string{"", "-1", "-5m", "yesterday", "1.5"} {
		_, err := ParseOffset(text, tailNow)
		f.So(err, should.NotBeNil)
	}
}

func (f *TailFixture) TestALineShowsTheOffsetTheEnvelopeAndAPreview() {
	d := messaging.Delivery{MessageID: "order-1", MessageType: "order.placed", CorrelationID: "c", Attempt: 1,
		Payload: []byte("{\"id\":1}\n"), Headers: map[string]any{OffsetArgument: int64(7)}}
	f.So(TailLine(d, 80), should.Equal, "7\tid=order-1\ttype=order.placed\tcorrelation=c\tattempt=1\t\"{\\\"id\\\":1}\\n\"")
	d.Payload = []byte(strings.Repeat("é", 10))
	d.Headers = nil
	f.So(TailLine(d, 5), should.EndWith, "\"éé\" …(20 bytes)")
	f.So(TailLine(d, 5), should.StartWith, "-\t")
}

// FuzzParseOffset: whatever an operator types, ParseOffset answers without
// panicking, and an offset it accepts goes on the wire as a valid AMQP value.
func FuzzParseOffset(f *testing.F) {
	for _, seed := range []string{"first", "41337", "2026-12-01T10:00:00Z", "90m", "-1", "18446744073709551615", "\x00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		offset, err := ParseOffset(text, tailNow)
		if err != nil {
			return
		}
		switch v := offset.Argument().(type) {
		case string, time.Time:
		case int64:
			if v < 0 {
				t.Fatalf("%q parsed to a negative offset %d", text, v)
			}
		default:
			t.Fatalf("%q parsed to a %T", text, v)
		}
	})
}
