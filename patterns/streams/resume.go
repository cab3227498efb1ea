package streams

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/decorate"
)

// position is what one reader was handed and settled, so that a reattached
// consumer starts where this process left off instead of at the stated
// offset again. It lives as long as the Read that made it: a restart of the
// process starts at the stated offset (a checkpoint is the application's).
type position struct {
	stated Offset

	mu          sync.Mutex
	outstanding map[uint64]struct{} // handed to the runtime, not settled yet
	newest      uint64              // the newest offset settled
	settled     bool                // whether any offset was settled
	opened      bool                // whether a consumer was started before
}

func newPosition(stated Offset) *position {
	return &position{stated: stated, outstanding: map[uint64]struct{}{}}
}

// start is where the next consumer starts: the stated offset the first time;
// afterwards the oldest offset handed over and not settled, or one past the
// newest settled, or the stated offset when nothing was handed yet. resumed
// says whether it is a resumption.
func (p *position) start() (offset Offset, resumed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	first := !p.opened
	p.opened = true
	switch {
	case first:
		return p.stated, false
	case len(p.outstanding) > 0:
		return FromOffset(slices.Min(slices.Collect(maps.Keys(p.outstanding)))), true
	case p.settled:
		return FromOffset(p.newest + 1), true
	default:
		return p.stated, false
	}
}

func (p *position) handed(offset uint64) {
	p.mu.Lock()
	p.outstanding[offset] = struct{}{}
	p.mu.Unlock()
}

func (p *position) settle(offsets []uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, offset := range offsets {
		delete(p.outstanding, offset)
		if !p.settled || offset > p.newest {
			p.newest, p.settled = offset, true
		}
	}
}

// resumingConnector opens connections whose readers consume the stream at
// the position's start, with the stated consumer tag; everything else passes
// through unchanged.
type resumingConnector struct {
	messaging.Connector
	stream   string
	tag      string
	position *position
	monitor  Monitor
	logger   *slog.Logger
}

func (c *resumingConnector) Connect(ctx context.Context) (messaging.Connection, error) {
	connection, err := c.Connector.Connect(ctx)
	return decorate.Opened("streams", "connection", connection, err, func(connection messaging.Connection) messaging.Connection {
		return &resumingConnection{Connection: connection, connector: c}
	})
}

type resumingConnection struct {
	messaging.Connection
	connector *resumingConnector
}

// Unwrap lets capabilities of the transport's connection (its Declarer) be
// found through this decorator.
func (c *resumingConnection) Unwrap() messaging.Connection { return c.Connection }

func (c *resumingConnection) Reader(ctx context.Context) (messaging.Reader, error) {
	reader, err := c.Connection.Reader(ctx)
	return decorate.Opened("streams", "reader", reader, err, func(reader messaging.Reader) messaging.Reader {
		return &resumingReader{Reader: reader, connector: c.connector}
	})
}

type resumingReader struct {
	messaging.Reader
	connector *resumingConnector
}

// Stream starts the stream's consumer at the position's start, with an
// explicit x-stream-offset every time.
func (r *resumingReader) Stream(ctx context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	c := r.connector
	if config.StreamName != c.stream {
		return r.Reader.Stream(ctx, config)
	}
	offset, resumed := c.position.start()
	arguments := make(map[string]any, len(config.ConsumerArguments)+1)
	maps.Copy(arguments, config.ConsumerArguments)
	arguments[OffsetArgument] = offset.Argument()
	config.ConsumerArguments = arguments
	if c.tag != "" {
		config.ConsumerName, config.ExactConsumerTag = c.tag, true
	}
	stream, err := r.Reader.Stream(ctx, config)
	if err != nil {
		return nil, err
	}
	if resumed {
		c.monitor.Resumed(c.stream, uint64(offset.exact))
	}
	resuming := &resumingStream{Stream: stream, position: c.position}
	if offset.kind == offsetExact && !resumed {
		resuming.expect, resuming.gap = uint64(offset.exact), func(first uint64) {
			c.logger.Warn("Stream reader started after the offset it was asked for; retention removed the messages in between before they were read",
				"stream", c.stream, "asked", offset.exact, "first", first, "missed", first-uint64(offset.exact))
		}
	}
	return resuming, nil
}

type resumingStream struct {
	messaging.Stream
	position *position
	// expect is the exact offset this consumer was started at, and gap what
	// is told when its first delivery comes later than that (nil: nothing
	// to check, or checked).
	expect uint64
	gap    func(first uint64)
}

func (s *resumingStream) Read(ctx context.Context, delivery *messaging.Delivery) error {
	if err := s.Stream.Read(ctx, delivery); err != nil {
		return err
	}
	if offset, ok := OffsetOf(*delivery); ok {
		s.position.handed(offset)
		if s.gap != nil {
			if offset > s.expect {
				s.gap(offset)
			}
			s.gap = nil
		}
	}
	return nil
}

func (s *resumingStream) Acknowledge(ctx context.Context, deliveries ...messaging.Delivery) error {
	if err := s.Stream.Acknowledge(ctx, deliveries...); err != nil {
		return err
	}
	offsets := make([]uint64, 0, len(deliveries))
	for _, d := range deliveries {
		if offset, ok := OffsetOf(d); ok {
			offsets = append(offsets, offset)
		}
	}
	s.position.settle(offsets)
	return nil
}
