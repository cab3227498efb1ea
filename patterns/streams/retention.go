package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/topology"
)

// Queue arguments of a stream's retention, the names every AceMQ library
// declares.
const (
	MaxAgeArgument       = "x-max-age"
	MaxBytesArgument     = "x-max-length-bytes"
	SegmentBytesArgument = "x-stream-max-segment-size-bytes"
)

// Retention is how long a stream keeps what was appended to it. A Retention
// with nothing set is legal and almost always a mistake: unbounded retention
// means until the disk is full, and a full disk is a broker-wide alarm that
// blocks every publisher on the node. Set at least one of MaxAge and MaxBytes
// on anything that runs for long.
type Retention struct {
	// MaxAge discards segments whose messages are all older than it; zero
	// means no age limit. It travels as x-max-age in the largest exact unit
	// (MaxAgeText).
	MaxAge time.Duration
	// MaxBytes bounds the stream's size on disk (x-max-length-bytes); zero
	// means no size limit.
	MaxBytes int64
	// SegmentBytes is the size of one segment file
	// (x-stream-max-segment-size-bytes). Retention discards whole segments, so
	// it is the granularity of MaxAge and MaxBytes. Zero leaves it out and the
	// broker's default applies: a value invented here would make the
	// declaration differ from one made by another library, and the broker
	// refuses a redeclaration that differs.
	SegmentBytes int64
}

// IsZero reports whether r sets nothing: a stream kept until the disk is full.
func (r Retention) IsZero() bool {
	return r.MaxAge <= 0 && r.MaxBytes <= 0 && r.SegmentBytes <= 0
}

// Arguments are the queue arguments r declares; an unset field is absent.
func (r Retention) Arguments() map[string]any {
	arguments := map[string]any{}
	if r.MaxAge > 0 {
		arguments[MaxAgeArgument] = MaxAgeText(r.MaxAge)
	}
	if r.MaxBytes > 0 {
		arguments[MaxBytesArgument] = r.MaxBytes
	}
	if r.SegmentBytes > 0 {
		arguments[SegmentBytesArgument] = r.SegmentBytes
	}
	return arguments
}

// MaxAgeText renders a maximum age as RabbitMQ reads x-max-age: a whole number
// with the largest unit that divides it exactly, days (D), hours (h), minutes
// (m) or seconds (s). Seven days is "7D", 24 hours "1D", 90 minutes "90m", an
// hour "1h" (never "3600s": the broker compares the argument as a string). A
// fraction of a second is dropped (1.5 s is "1s"), and an age under a second
// is "1s". Exported so a stream declared by hand can be compared with it.
func MaxAgeText(age time.Duration) string {
	seconds := int64(age / time.Second)
	if seconds < 1 {
		return "1s"
	}
	const minute, hour, day = 60, 60 * 60, 24 * 60 * 60
	switch {
	case seconds%day == 0:
		return strconv.FormatInt(seconds/day, 10) + "D"
	case seconds%hour == 0:
		return strconv.FormatInt(seconds/hour, 10) + "h"
	case seconds%minute == 0:
		return strconv.FormatInt(seconds/minute, 10) + "m"
	default:
		return strconv.FormatInt(seconds, 10) + "s"
	}
}

// Queue is the stream queue name declares with r: of type stream, durable,
// neither exclusive nor auto-delete (the broker refuses a stream that is any
// of those, with an error that does not mention streams).
func Queue(name string, r Retention) messaging.Queue {
	q := messaging.Queue{Name: name, Type: messaging.QueueStream, Durable: true}
	if arguments := r.Arguments(); len(arguments) > 0 {
		q.Arguments = arguments
	}
	return q
}

// Plan is the topology Declare applies, for a service that builds everything
// in one topology.Plan (Merge it) and prints or checks it.
func Plan(name string, r Retention) topology.Plan {
	return topology.Plan{Queues: []messaging.Queue{Queue(name, r)}}
}

// Declare declares the stream name with retention r through the connection's
// messaging.Declarer, or checks that it exists alike. Redeclaring a stream
// with other arguments (another MaxAge, or one the first declaration did not
// carry) is refused by RabbitMQ and matches messaging.ErrPreconditionFailed;
// delete the stream and declare it again to change its retention. On the
// in-memory transport the declaration is recorded, not interpreted: it
// succeeds, and only Read refuses. A Retention with nothing set logs one
// WARN to slog.Default(), "Stream has no retention; ..." with the stream
// attribute: it is almost always a mistake.
func Declare(ctx context.Context, conn messaging.Connection, name string, r Retention) error {
	if name == "" {
		return errors.New("streams: declare a stream with no name; name it")
	}
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		return fmt.Errorf("streams: declare stream %q: the connection cannot declare topology (it is no messaging.Declarer, nor decorates one); declare it with the transport's own connection", name)
	}
	if err := Plan(name, r).Apply(ctx, declarer); err != nil {
		return fmt.Errorf("streams: declare stream %q: %w", name, err)
	}
	if r.IsZero() {
		slog.Default().Warn("Stream has no retention; set Retention.MaxAge or MaxBytes before a full disk blocks every publisher on the node",
			slog.String("stream", name))
	}
	return nil
}
