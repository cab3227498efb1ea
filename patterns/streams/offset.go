package streams

import (
	"fmt"
	"math"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// OffsetArgument is the consumer argument that says where a stream reader
// starts, and the header RabbitMQ stamps on every stream delivery with its
// position. It is outside the reserved x-acemq- namespace, so the transports
// leave it on Delivery.Headers.
const OffsetArgument = "x-stream-offset"

// Offset is where a reader starts in a stream. It is a consumer setting, not
// a queue setting: two readers of one stream sit in different places. Build
// one with FromFirst, FromLast, FromNext, FromOffset or FromTimestamp; the
// zero Offset is FromNext.
type Offset struct {
	kind  offsetKind
	exact int64
	at    time.Time
}

type offsetKind int

const (
	offsetNext offsetKind = iota
	offsetFirst
	offsetLast
	offsetExact
	offsetTimestamp
)

// FromFirst starts at the oldest message the stream still holds, which is not
// necessarily the first ever written: retention has been running.
func FromFirst() Offset { return Offset{kind: offsetFirst} }

// FromLast starts at the last chunk of the log: "the recent past", not one
// message back. Use FromOffset when a position must be honoured exactly.
func FromLast() Offset { return Offset{kind: offsetLast} }

// FromNext starts with what is appended from now on. It is the default, which
// is right for a consumer joining a live system and wrong for a projection.
func FromNext() Offset { return Offset{kind: offsetNext} }

// FromOffset starts at an exact position, typically one past the last offset a
// checkpoint recorded (FromOffset(saved + 1)). An offset past the largest
// signed 64-bit integer is clamped to it: AMQP's field table carries signed
// integers, and an unsigned one would be refused.
func FromOffset(offset uint64) Offset {
	return Offset{kind: offsetExact, exact: int64(min(offset, math.MaxInt64))}
}

// FromTimestamp starts at the first chunk holding messages appended at or
// after t (whole seconds): a reader may see a few messages from just before t.
// The broker stamps chunks with its own clock, which follows a step of the
// system clock only slowly: for some minutes after one it runs behind, and a
// reader started from time.Now() then starts after messages appended since.
func FromTimestamp(t time.Time) Offset { return Offset{kind: offsetTimestamp, at: t} }

// Argument is the value sent as x-stream-offset, in the AMQP type RabbitMQ
// wants: the strings "first", "last" and "next", a signed 64-bit integer for
// an exact offset, a time.Time (an AMQP timestamp) for FromTimestamp.
func (o Offset) Argument() any {
	switch o.kind {
	case offsetFirst:
		return "first"
	case offsetLast:
		return "last"
	case offsetExact:
		return o.exact
	case offsetTimestamp:
		return o.at.Truncate(time.Second)
	default:
		return "next"
	}
}

// String names the offset as the CLI and the logs spell it.
func (o Offset) String() string {
	switch o.kind {
	case offsetExact:
		return fmt.Sprintf("offset %d", o.exact)
	case offsetTimestamp:
		return "timestamp " + o.at.UTC().Format(time.RFC3339)
	default:
		return o.Argument().(string)
	}
}

// OffsetOf reads the x-stream-offset RabbitMQ stamped on a stream delivery,
// tolerantly: an integer of any width, signed or not, since which width
// arrives depends on the client that decoded it. The second result says
// whether the delivery carried a usable offset at all; it tells offset 0 (the
// first message of the stream) from a delivery that said nothing, so a
// checkpoint of 0 is never written for a message that had no position. A
// negative value, a float or text reads as no offset.
func OffsetOf(delivery messaging.Delivery) (uint64, bool) {
	switch value := delivery.Headers[OffsetArgument].(type) {
	case uint64:
		return value, true
	case uint:
		return uint64(value), true
	case int8, int16, int32, int64, int, uint8, uint16, uint32:
		n, ok := wire.Integer(value)
		if !ok || n < 0 {
			return 0, false
		}
		return uint64(n), true
	default:
		return 0, false
	}
}
