package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
)

// OffsetBeyondEndError is what Read returns when the exact offset it was asked
// to start at lies beyond the end of the stream. RabbitMQ accepts such an
// offset and then delivers nothing until the stream grows that far, so a
// projection restarted from a checkpoint saved for an earlier stream of the
// same name (deleted and declared again, or a broker whose data was reset)
// would wait silently for as long as it took, perhaps for ever.
type OffsetBeyondEndError struct {
	Stream string
	// Offset is where the reader was asked to start.
	Offset uint64
	// Next is the offset the stream's next message will get: the stream
	// holds offsets below it and nothing at or after it.
	Next uint64
}

func (e *OffsetBeyondEndError) Error() string {
	return fmt.Sprintf("streams: stream %q was asked to start at offset %d, but its next message will have offset %d, so the reader would wait without a word until the stream grew that far; "+
		"the position was saved for another stream of this name (deleted and declared again, or a broker reset): start FromFirst or FromNext and reset the saved checkpoint",
		e.Stream, e.Offset, e.Next)
}

// endQuiet is how long the probe waits for a further delivery before it takes
// the newest offset it saw as the stream's last. The broker hands the last
// chunk over at once when the probe attaches.
const endQuiet = time.Second

// endLimit bounds the whole probe, whatever the caller's context: a stream
// appended to without pause is never quiet, and an offset it really holds is
// reached within the last chunk, long before this.
const endLimit = 10 * time.Second

// endProbeTag is the consumer tag of the probe, as the management interface
// shows it while the probe runs.
const endProbeTag = "warrenmq-stream-end-probe"

// checkReachable returns an *OffsetBeyondEndError when stream ends before
// offset, found by a short-lived consumer that attaches at the last chunk
// (FromLast) and reads until it sees offset-1 (the stream reaches the offset:
// nil at once) or the broker has nothing more for endQuiet; endLimit and ctx
// bound the whole probe. Offset zero is always reachable.
func checkReachable(ctx context.Context, connector messaging.Connector, stream string, offset uint64) error {
	if offset == 0 {
		return nil
	}
	probe, detach, err := attach(ctx, connector, stream, endProbeTag, FromLast(), 1000)
	if err != nil {
		return fmt.Errorf("streams: attach to the end of stream %q: %w", stream, err)
	}
	defer detach()
	limit := time.Now().Add(endLimit)
	var next uint64 // one past the newest offset seen
	for {
		quiet := time.Now().Add(endQuiet)
		if quiet.After(limit) {
			quiet = limit
		}
		read, cancel := context.WithDeadline(ctx, quiet)
		var delivery messaging.Delivery
		err := probe.Read(read, &delivery)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			// Quiet, or past the limit: the stream holds nothing at or after next.
			return &OffsetBeyondEndError{Stream: stream, Offset: offset, Next: next}
		default:
			return fmt.Errorf("streams: read the end of stream %q: %w", stream, err)
		}
		if at, ok := OffsetOf(delivery); ok {
			if at+1 >= offset {
				return nil
			}
			next = max(next, at+1)
		}
		if err := probe.Acknowledge(ctx, delivery); err != nil {
			return fmt.Errorf("streams: read the end of stream %q: %w", stream, err)
		}
	}
}
