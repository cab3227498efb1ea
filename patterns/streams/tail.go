package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/warrenmq/messaging"
)

// ParseOffset reads an offset as an operator writes it (the CLI's --from):
// first, last or next; a decimal offset (41337); a time in RFC 3339
// (2026-12-01T10:00:00Z); or a duration before now (90m: FromTimestamp of
// now less 90 minutes).
func ParseOffset(text string, now time.Time) (Offset, error) {
	text = strings.TrimSpace(text)
	switch strings.ToLower(text) {
	case "first":
		return FromFirst(), nil
	case "last":
		return FromLast(), nil
	case "next":
		return FromNext(), nil
	}
	if n, err := strconv.ParseUint(text, 10, 64); err == nil {
		return FromOffset(n), nil
	}
	if t, err := time.Parse(time.RFC3339, text); err == nil {
		return FromTimestamp(t), nil
	}
	if d, err := time.ParseDuration(text); err == nil && d > 0 {
		return FromTimestamp(now.Add(-d)), nil
	}
	return Offset{}, fmt.Errorf("streams: %q is no offset; write first, last, next, an offset (41337), a time (2026-12-01T10:00:00Z) or how long ago (90m)", text)
}

// DefaultTailPrefetch is the prefetch of Tail.
const DefaultTailPrefetch = 100

// Tail reads the stream name from offset with the transport's own reader,
// outside the streaming runtime, and calls each with every delivery until
// each returns false, ctx ends (a nil error), or the stream fails. Nothing is
// set aside, copied or republished; each delivery is acknowledged after each
// returns, which on a stream only lets the broker send the next (it removes
// nothing and records no position). It declares nothing. Refused on a
// transport without streams (ErrUnsupported).
func Tail(ctx context.Context, connector messaging.Connector, name string, offset Offset, each func(messaging.Delivery) bool) error {
	supported, err := Supported(ctx, connector)
	if err != nil {
		return err
	}
	if !supported {
		return ErrUnsupported
	}
	stream, detach, err := attach(ctx, connector, name, name+"-tail", offset, DefaultTailPrefetch)
	if err != nil {
		return fmt.Errorf("streams: tail %q: %w", name, err)
	}
	defer detach()
	for {
		var d messaging.Delivery
		if err := stream.Read(ctx, &d); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil
			}
			return fmt.Errorf("streams: tail %q: %w", name, err)
		}
		more := each(d)
		if err := stream.Acknowledge(ctx, d); err != nil && ctx.Err() == nil {
			return fmt.Errorf("streams: tail %q: %w", name, err)
		}
		if !more {
			return nil
		}
	}
}

// attach opens a connection, a reader and a consumer of the stream name at
// offset, outside the streaming runtime; detach closes the three.
func attach(ctx context.Context, connector messaging.Connector, name, tag string, offset Offset, prefetch uint16) (_ messaging.Stream, detach func(), err error) {
	conn, err := connector.Connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	reader, err := conn.Reader(ctx)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	stream, err := reader.Stream(ctx, messaging.StreamConfig{
		StreamName:        name,
		ConsumerName:      tag,
		ConsumerArguments: map[string]any{OffsetArgument: offset.Argument()},
		BufferCapacity:    prefetch,
	})
	if err != nil {
		_ = reader.Close()
		_ = conn.Close()
		return nil, nil, err
	}
	return stream, func() {
		_ = stream.Close()
		_ = reader.Close()
		_ = conn.Close()
	}, nil
}

// TailLine is one line of a tail: the offset, the envelope's id, type and
// correlation, and the body's first width bytes (cut on a rune boundary,
// with control characters shown escaped).
func TailLine(d messaging.Delivery, width int) string {
	position := "-"
	if offset, ok := OffsetOf(d); ok {
		position = strconv.FormatUint(offset, 10)
	}
	body := d.Payload
	cut := len(body) > width
	if cut {
		body = body[:max(width, 0)]
		for len(body) > 0 && !utf8.Valid(body) {
			body = body[:len(body)-1]
		}
	}
	preview := strconv.Quote(string(body))
	if cut {
		preview += fmt.Sprintf(" …(%d bytes)", len(d.Payload))
	}
	return fmt.Sprintf("%s\tid=%s\ttype=%s\tcorrelation=%s\tattempt=%d\t%s", position, d.MessageID, d.MessageType, d.CorrelationID, d.Attempt, preview)
}
