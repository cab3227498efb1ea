package streams

import (
	"math"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestOffsetFixture(t *testing.T) {
	gunit.Run(new(OffsetFixture), t)
}

type OffsetFixture struct {
	*gunit.Fixture
}

func (f *OffsetFixture) TestEachOffsetTravelsInTheAMQPTypeRabbitMQWants() {
	at := time.Date(2026, 12, 1, 10, 0, 0, 700_000_000, time.UTC)
	f.So(FromFirst().Argument(), should.Equal, "first")
	f.So(FromLast().Argument(), should.Equal, "last")
	f.So(FromNext().Argument(), should.Equal, "next")
	f.So(Offset{}.Argument(), should.Equal, "next")
	f.So(FromOffset(41337).Argument(), should.Equal, int64(41337))
	f.So(FromOffset(math.MaxUint64).Argument(), should.Equal, int64(math.MaxInt64))
	f.So(FromTimestamp(at).Argument(), should.Equal, at.Truncate(time.Second))
	for _, offset := range []Offset{FromFirst(), FromLast(), FromNext(), FromOffset(7), FromTimestamp(at)} {
		f.So(amqp.Table{OffsetArgument: offset.Argument()}.Validate(), should.BeNil)
	}
	// The bug the AceMQ changelog tells of: an unsigned offset is no AMQP field value.
	f.So(amqp.Table{OffsetArgument: uint64(41337)}.Validate(), should.NotBeNil)
}

func (f *OffsetFixture) TestOffsetsAreNamedForTheLogs() {
	f.So(FromFirst().String(), should.Equal, "first")
	f.So(FromOffset(3).String(), should.Equal, "offset 3")
	f.So(FromTimestamp(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)).String(), should.Equal, "timestamp 2026-12-01T10:00:00Z")
}

func (f *OffsetFixture) TestOffsetOfReadsAnyIntegerWidthAndTellsZeroFromNothing() {
	for _, value := range []any{int64(0), int32(0), int(0), uint8(0), uint64(0)} {
		offset, ok := OffsetOf(at("m", value))
		f.So(ok, should.BeTrue)
		f.So(offset, should.Equal, uint64(0))
	}
	for _, value := range []any{int64(41337), int32(41337), int16(41337 % math.MaxInt16), uint32(41337), uint(41337)} {
		offset, ok := OffsetOf(at("m", value))
		f.So(ok, should.BeTrue)
		f.So(offset, should.BeGreaterThan, uint64(0))
	}
	offset, ok := OffsetOf(at("m", uint64(math.MaxUint64)))
	f.So(ok, should.BeTrue)
	f.So(offset, should.Equal, uint64(math.MaxUint64))
	for _, value := range []any{int64(-1), int8(-3), 1.0, "12", nil, []byte("1")} {
		_, ok := OffsetOf(at("m", value))
		f.So(ok, should.BeFalse)
	}
	_, ok = OffsetOf(messaging.Delivery{})
	f.So(ok, should.BeFalse)
}

// FuzzOffsetOf: whatever a header carries, OffsetOf never panics, and an
// offset it reports is the value sent.
func FuzzOffsetOf(f *testing.F) {
	f.Add(int64(0), "0", uint8(0))
	f.Add(int64(-1), "x", uint8(1))
	f.Add(int64(math.MaxInt64), "", uint8(2))
	f.Fuzz(func(t *testing.T, n int64, text string, kind uint8) {
		var value any
		switch kind % 4 {
		case 0:
			value = n
		case 1:
			value = int32(n)
		case 2:
			value = text
		default:
			value = uint64(n)
		}
		offset, ok := OffsetOf(messaging.Delivery{Headers: map[string]any{OffsetArgument: value}})
		switch v := value.(type) {
		case int64:
			if ok != (v >= 0) || (ok && offset != uint64(v)) {
				t.Fatalf("%d read as %d, %v", v, offset, ok)
			}
		case int32:
			if ok != (v >= 0) || (ok && offset != uint64(v)) {
				t.Fatalf("%d read as %d, %v", v, offset, ok)
			}
		case uint64:
			if !ok || offset != v {
				t.Fatalf("%d read as %d, %v", v, offset, ok)
			}
		case string:
			if ok {
				t.Fatalf("text %q read as an offset", v)
			}
		}
	})
}
