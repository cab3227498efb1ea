package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// The stamps every moved copy carries. They are unprefixed on purpose: a
// header under the reserved x-acemq- namespace that the envelope does not
// carry is removed on consume, so a stamp written there would never reach a
// handler. Java, Python and Ruby write these same names.
const (
	// HeaderReplayedFrom is the queue the copy was replayed from.
	HeaderReplayedFrom = "acemq-replayed-from"
	// HeaderReplayedAt is when it was replayed, RFC 3339 in UTC
	// (2026-02-03T04:05:06Z), not epoch milliseconds.
	HeaderReplayedAt = "acemq-replayed-at"
	// HeaderReplayCount is how many times the message was replayed: the
	// previous count plus one, a signed 32-bit integer as the family writes
	// it.
	HeaderReplayCount = "acemq-replay-count"
)

// Reason is why a pass stopped.
type Reason string

// The reasons a pass stops.
const (
	// Drained: the broker had nothing left to hand over.
	Drained Reason = "drained"
	// Limit: From.Limit messages were moved.
	Limit Reason = "limit"
	// Deadline: From.Deadline passed.
	Deadline Reason = "deadline"
	// Cancelled: the context ended.
	Cancelled Reason = "cancelled"
	// Failed: a read, a publish or an acknowledgement failed; Run returns
	// the error.
	Failed Reason = "failed"
)

// Verdict is what became of one message, as Options.Each reports it.
type Verdict string

// The verdicts Options.Each reports.
const (
	// Moved: the copy landed and the original was acknowledged (in a dry
	// run: it would have been moved, and was left where it was).
	Moved Verdict = "moved"
	// Declined: the filter declined it; it goes back to its queue when the
	// pass ends.
	Declined Verdict = "declined"
)

// From says what to replay and where to.
type From struct {
	// Queue is the queue to read: a dead-letter queue ({queue}.dlq), a
	// parking queue ({queue}.parked), or any other. Required.
	Queue string
	// Topic is the exchange to publish the copies to; empty is the default
	// exchange.
	Topic string
	// RoutingKey is the key to publish the copies under. When empty: the
	// queue Queue was set aside from (orders for orders.dlq and
	// orders.parked); for another queue, with a Topic, the key each message
	// arrived with. Through the default exchange that is a queue name.
	RoutingKey string
	// Limit is the most messages to move; 0 means no limit.
	Limit int
	// Deadline stops the pass when it passes; zero means none.
	Deadline time.Time
	// Filter picks the messages to move (Delivery.Error holds the reason a
	// message was set aside, Payload its bytes); nil moves every message.
	// Declined messages stay in Queue.
	Filter func(messaging.Delivery) bool
	// KeepAttempts republishes x-acemq-attempt and x-acemq-error as they
	// were. By default a copy starts again at attempt 1 with no reason, so
	// a message given up on at its last attempt is handled again.
	KeepAttempts bool
	// DryRun reads and filters without publishing or acknowledging
	// anything: Result.Moved counts what would move, and every message read
	// goes back to Queue when the pass ends.
	DryRun bool
}

// Result is what a pass did.
type Result struct {
	// Moved counts copies confirmed and routed whose original was
	// acknowledged (in a dry run, the messages that would move).
	Moved int
	// Skipped counts the messages the filter declined.
	Skipped int
	// Reason is why the pass stopped.
	Reason Reason
	// DryRun reports a pass that moved nothing.
	DryRun bool
}

// String is the result as an operator reads it: "moved 500, skipped 31 (limit)".
func (r Result) String() string {
	verb := "moved"
	if r.DryRun {
		verb = "would move"
	}
	return fmt.Sprintf("%s %d, skipped %d (%s)", verb, r.Moved, r.Skipped, r.Reason)
}

// SourceOf is the queue a set-aside queue holds messages for: orders for
// orders.dlq and orders.parked; false for any other name.
func SourceOf(queue string) (string, bool) {
	for _, suffix := range []string{wire.DeadLetterSuffix, wire.ParkedSuffix} {
		if source, ok := strings.CutSuffix(queue, suffix); ok && source != "" {
			return source, true
		}
	}
	return "", false
}

// check refuses a From that names no queue or no destination, or one that
// would publish into the queue it reads (a pass that never drains).
func (f From) check() error {
	switch {
	case f.Queue == "":
		return errors.New("replay: From.Queue is empty; name the queue to replay, orders.dlq for example")
	case f.Limit < 0:
		return fmt.Errorf("replay: From.Limit is %d; use 0 for no limit or a positive count", f.Limit)
	}
	if f.Topic != "" {
		return nil
	}
	key := f.RoutingKey
	if key == "" {
		source, ok := SourceOf(f.Queue)
		if !ok {
			return fmt.Errorf("replay: %q is not a dead-letter or parking queue, so there is no queue to send its messages back to; set From.RoutingKey (a queue, through the default exchange) or From.Topic", f.Queue)
		}
		key = source
	}
	if key == f.Queue {
		return fmt.Errorf("replay: the destination is %q, the queue being read; the pass would read its own copies and never drain: name another destination", f.Queue)
	}
	return nil
}

// keyFor is the routing key of d's copy.
func (f From) keyFor(d messaging.Delivery) string {
	if f.RoutingKey != "" {
		return f.RoutingKey
	}
	if source, ok := SourceOf(f.Queue); ok {
		return source
	}
	return d.RoutingKey
}

// copyOf is the copy of d to publish: its bytes and envelope as they arrived
// (Delivery.Redispatch: mandatory, persistent, verbatim), to the destination,
// stamped, and with its attempts started again unless KeepAttempts.
func (f From) copyOf(d messaging.Delivery, now time.Time) messaging.Dispatch {
	copied := d.Redispatch(f.keyFor(d))
	copied.Topic = f.Topic
	if !f.KeepAttempts {
		copied.Attempt = 1
		copied.Error = ""
	}
	headers := maps.Clone(d.Headers)
	if headers == nil {
		headers = make(map[string]any, 3)
	}
	headers[HeaderReplayedFrom] = f.Queue
	headers[HeaderReplayedAt] = now.UTC().Format(time.RFC3339)
	headers[HeaderReplayCount] = nextCount(d.Headers[HeaderReplayCount])
	copied.Headers = headers
	return copied
}

// nextCount is the replay count a copy carries: the previous one (read in any
// width; absent, negative or unreadable is none) plus one, as a signed 32-bit
// integer, the width the family writes. A count at the largest such integer
// stays there.
func nextCount(previous any) int32 {
	count, ok := wire.Integer(previous)
	switch {
	case !ok || count < 0:
		return 1
	case count >= math.MaxInt32:
		return math.MaxInt32
	}
	return int32(count) + 1
}

// Run moves messages from From.Queue to the destination until the broker has
// nothing left for it (or the limit, the deadline or the context stops it),
// and says how many moved, how many the filter declined, and why it stopped.
//
// It reads one message at a time with the transport's poll mode (basic.get),
// as bytes: nothing is decoded, so a body nobody could read moves as it is.
// Each copy is published mandatory and persistent (up to 64 together, their
// confirms awaited at once) and its original is acknowledged only after the
// broker confirmed and routed it: a crash in
// between replays it twice, never zero times. A copy that reaches no queue
// (or any other failed publish) stops the pass with Reason Failed and an
// error that wraps the transport's (errors.Is(err, messaging.ErrUnroutable)
// for an unbound destination); that original goes back to its queue.
//
// Declined messages are held unacknowledged until the pass ends and then
// returned together: returning each at once would put it back at the head of
// the queue, to be read again, and the pass would never get past it. The same
// holds for a pass that fails half way: what it holds goes back.
//
// The error is nil when the pass drained, reached the limit or passed its
// deadline; it wraps the context's error when cancelled. A step the deadline
// or a cancellation cut short leaves its message unacknowledged, so it goes
// back to its queue (and its copy may have landed too: a duplicate).
func Run(ctx context.Context, connector messaging.Connector, from From, options ...Option) (Result, error) {
	c := newConfig(options)
	result := Result{DryRun: from.DryRun}
	if err := from.check(); err != nil {
		result.Reason = Failed
		return result, err
	}
	p := &pass{config: c, from: from, result: &result, moved: map[string]struct{}{}}
	err := p.run(ctx, connector)
	c.monitor.Finished(from.Queue, result)
	return result, err
}

// pass is one Run's state.
type pass struct {
	config config
	from   From
	result *Result
	// moved holds the ids moved so far: one read again means the
	// destination routes back into the queue being read.
	moved map[string]struct{}
}

func (p *pass) run(ctx context.Context, connector messaging.Connector) (err error) {
	work := ctx
	if !p.from.Deadline.IsZero() {
		var cancel context.CancelFunc
		work, cancel = context.WithDeadline(ctx, p.from.Deadline)
		defer cancel()
	}
	l, err := p.open(work, connector)
	if err != nil {
		return p.stopped(ctx, err)
	}
	defer func() {
		// Closing the stream returns every message still held: the declined
		// ones, and one whose copy did not land.
		if closeErr := l.close(); closeErr != nil && err == nil {
			err = fmt.Errorf("replay %s: %s, but closing the queue failed, so the %d declined message(s) return only when the connection closes: %w",
				p.from.Queue, p.result, p.result.Skipped, closeErr)
		}
	}()
	return p.loop(ctx, work, l)
}

// lane is what a pass reads and writes through: one connection, a reader
// with the queue's stream in poll mode, and a writer (none in a dry run).
type lane struct {
	conn   messaging.Connection
	reader messaging.Reader
	writer messaging.Writer
	stream messaging.Stream
}

// open connects and opens the lane; what opened before a failure is closed.
func (p *pass) open(work context.Context, connector messaging.Connector) (l *lane, err error) {
	queue := p.from.Queue
	l = &lane{}
	defer func() {
		if err != nil {
			_ = l.close()
		}
	}()
	if l.conn, err = connector.Connect(work); err != nil {
		return l, fmt.Errorf("replay %s: connect: %w", queue, err)
	}
	if l.reader, err = l.conn.Reader(work); err != nil {
		return l, fmt.Errorf("replay %s: open a reader: %w", queue, err)
	}
	if !p.from.DryRun {
		if l.writer, err = l.conn.Writer(work); err != nil {
			return l, fmt.Errorf("replay %s: open a writer: %w", queue, err)
		}
	}
	if l.stream, err = l.reader.Stream(work, messaging.StreamConfig{StreamName: queue, Poll: true}); err != nil {
		return l, fmt.Errorf("replay %s: open the queue: %w", queue, err)
	}
	return l, nil
}

// close closes the stream first (which returns what it holds), then the
// writer, the reader and the connection, and reports the stream's error.
func (l *lane) close() error {
	var err error
	if l.stream != nil {
		err = l.stream.Close()
	}
	for _, closer := range []io.Closer{l.writer, l.reader, l.conn} {
		if closer != nil {
			_ = closer.Close()
		}
	}
	return err
}

// loop reads, filters and moves messages until the pass stops, and says why.
func (p *pass) loop(ctx, work context.Context, l *lane) error {
	queue := p.from.Queue
	var batch []messaging.Delivery // read, accepted, not yet published
	flush := func() error {
		err := p.move(work, l.stream, l.writer, batch)
		batch = batch[:0]
		return err
	}
	for {
		if p.from.Limit > 0 && p.result.Moved+len(batch) >= p.from.Limit {
			if err := flush(); err != nil {
				return p.stopped(ctx, err)
			}
			p.result.Reason = Limit
			return nil
		}
		if work.Err() != nil {
			return p.stopped(ctx, nil) // what the batch holds goes back
		}
		var d messaging.Delivery
		if err := l.stream.Read(work, &d); err != nil {
			if !errors.Is(err, messaging.ErrQueueEmpty) {
				return p.stopped(ctx, fmt.Errorf("replay %s: read: %w", queue, err))
			}
			if err := flush(); err != nil {
				return p.stopped(ctx, err)
			}
			p.result.Reason = Drained
			return nil
		}
		if _, again := p.moved[d.MessageID]; again && d.MessageID != "" {
			if err := flush(); err != nil {
				return p.stopped(ctx, err)
			}
			return p.stopped(ctx, fmt.Errorf("replay %s: message %s came back to %s after it was moved: the destination routes into the queue being read, so the pass would never drain; it stopped, and the copies it moved are in %s. Name a destination that does not lead back",
				queue, d.MessageID, queue, queue))
		}
		if !p.take(d) {
			continue
		}
		batch = append(batch, d)
		if len(batch) == pipeline {
			if err := flush(); err != nil {
				return p.stopped(ctx, err)
			}
		}
	}
}

// take reports whether d is to be moved: not when the filter declines it
// (counted as skipped), nor in a dry run (counted as moved, nothing sent).
func (p *pass) take(d messaging.Delivery) bool {
	if p.from.Filter != nil && !p.from.Filter(d) {
		p.result.Skipped++
		p.config.monitor.Declined(p.from.Queue)
		p.config.each(d, Declined)
		return false
	}
	if p.from.DryRun {
		p.result.Moved++
		p.config.each(d, Moved)
		return false
	}
	return true
}

// pipeline is how many copies are published together, their confirms
// awaited at once, before their originals are acknowledged: a round trip per
// batch rather than per message. Reads stay one message at a time.
const pipeline = 64

// move publishes the copies of batch together and acknowledges the
// originals whose copies landed (confirmed and routed). When some did not,
// the error names the first; their originals stay unacknowledged and go back
// to the queue when the pass ends.
func (p *pass) move(ctx context.Context, stream messaging.Stream, writer messaging.Writer, batch []messaging.Delivery) error {
	if len(batch) == 0 {
		return nil
	}
	now := time.Now()
	copies := make([]messaging.Dispatch, len(batch))
	for i, d := range batch {
		copies[i] = p.from.copyOf(d, now)
	}
	landed := batch
	_, writeErr := writer.Write(ctx, copies...)
	failed := -1
	if writeErr != nil {
		landed, failed = nil, 0
		var publishErr *messaging.PublishError
		if errors.As(writeErr, &publishErr) && len(publishErr.Results) == len(batch) {
			failed = -1
			for i, r := range publishErr.Results {
				if r.Err == nil && r.Confirmed && r.Routed {
					landed = append(landed, batch[i])
				} else if failed < 0 {
					failed = i
				}
			}
		}
		if failed < 0 {
			failed = 0
		}
	}
	var ackErr error
	if len(landed) > 0 {
		ackErr = stream.Acknowledge(ctx, landed...)
	}
	for _, d := range landed {
		// A copy that landed counts as moved, even when its original could
		// not be acknowledged and comes back.
		p.result.Moved++
		p.moved[d.MessageID] = struct{}{}
		p.config.monitor.Moved(p.from.Queue)
		p.config.each(d, Moved)
	}
	if writeErr != nil {
		return fmt.Errorf("replay %s: the copy of message %s to %s did not land, so the original was not acknowledged and goes back to %s (%d of the %d copies published with it landed): %w",
			p.from.Queue, batch[failed].MessageID, destination(copies[failed]), p.from.Queue, len(landed), len(batch), writeErr)
	}
	if ackErr != nil {
		return fmt.Errorf("replay %s: %d copies landed in %s but their originals could not be acknowledged, so they go back to %s and a later pass moves them again (duplicates): %w",
			p.from.Queue, len(landed), destination(copies[0]), p.from.Queue, ackErr)
	}
	return nil
}

// stopped sets the reason a pass that did not drain stopped: cancelled when
// the caller's context ended, deadline when From.Deadline passed, failed
// otherwise. It returns err, or the context's error when cancelled.
func (p *pass) stopped(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		p.result.Reason = Cancelled
		if err == nil {
			err = fmt.Errorf("replay %s: %s: %w", p.from.Queue, "cancelled", context.Cause(ctx))
		}
		return err
	case !p.from.Deadline.IsZero() && !time.Now().Before(p.from.Deadline):
		// A step the deadline cut short left its message unacknowledged,
		// so it goes back; its copy may have landed too (a duplicate).
		p.result.Reason = Deadline
		return nil
	}
	p.result.Reason = Failed
	return err
}

// destination names where a copy goes, for error texts.
func destination(d messaging.Dispatch) string {
	if d.Topic == "" {
		return fmt.Sprintf("queue %q (default exchange)", d.RoutingKey)
	}
	return fmt.Sprintf("exchange %q with key %q", d.Topic, d.RoutingKey)
}
