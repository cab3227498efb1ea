package console

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// Why a read of a queue stopped.
const (
	stoppedAtEnd    = "end"    // the broker had nothing more: every message was read
	stoppedAtLimit  = "limit"  // the most messages a read may take
	stoppedAtBudget = "budget" // the time a read may take
	stoppedByVisit  = "found"  // what was looked for was found
)

// scanned says what one read of a queue covered.
type scanned struct {
	Read    int
	Stopped string
	Took    time.Duration
}

// Complete reports a read that saw every message of the queue.
func (s scanned) Complete() bool { return s.Stopped == stoppedAtEnd }

// scan reads queue from its head without taking anything from it: each
// message is fetched with the transport's poll mode (basic.get) and held
// unacknowledged, and closing the stream at the end hands every one back.
// A classic queue puts a message handed back at the position it had, so
// the queue's order is what it was (the browse-order test proves it). At
// most limit messages are read, for at most budget; visit sees each, and
// stops the read by returning false. Nothing visit is given may be kept:
// the delivery, its payload and its headers are reused.
func (c *Console) scan(ctx context.Context, queue string, limit int, budget time.Duration, visit func(position int, d *messaging.Delivery) bool) (scanned, error) {
	started := time.Now()
	result := scanned{}
	conn, err := c.connection(ctx)
	if err != nil {
		return result, err
	}
	reader, err := conn.Reader(ctx)
	if err != nil {
		c.dropIfLost(conn, err)
		return result, fmt.Errorf("open a reader for %s: %w", queue, err)
	}
	defer func() { _ = reader.Close() }() // closes the stream: everything read goes back
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: queue, Poll: true})
	if err != nil {
		c.dropIfLost(conn, err)
		return result, fmt.Errorf("open %s: %w", queue, err)
	}
	defer func() { _ = stream.Close() }()
	deadline := started.Add(budget)
	for {
		switch {
		case result.Read >= limit:
			result.Stopped = stoppedAtLimit
		case !time.Now().Before(deadline):
			result.Stopped = stoppedAtBudget
		}
		if result.Stopped != "" {
			break
		}
		var d messaging.Delivery
		err := stream.Read(ctx, &d)
		if errors.Is(err, messaging.ErrQueueEmpty) {
			result.Stopped = stoppedAtEnd
			break
		}
		if err != nil {
			c.dropIfLost(conn, err)
			result.Took = time.Since(started)
			return result, fmt.Errorf("read %s (after %d messages): %w", queue, result.Read, err)
		}
		result.Read++
		if !visit(result.Read, &d) {
			result.Stopped = stoppedByVisit
			break
		}
	}
	result.Took = time.Since(started)
	return result, nil
}

// dropIfLost forgets the kept connection when err says it was lost, so the
// next page dials again.
func (c *Console) dropIfLost(conn messaging.Connection, err error) {
	if messaging.IsConnectionLost(err) {
		c.link.Discard(conn)
	}
}

// header is one application header as a page shows it.
type header struct {
	Name, Value string
}

// messageView is one set-aside message as a page shows it: its envelope,
// headers and a preview of its payload, all text.
type messageView struct {
	Position        int
	ID              string
	Type            string
	CorrelationID   string
	CausationID     string
	Origin          string
	Reason          string
	Group           string
	Attempt         int
	Version         int
	FirstSeen       time.Time
	Timestamp       time.Time
	Redelivered     bool
	ContentType     string
	ContentEncoding string
	RoutingKey      string
	Headers         []header
	Preview         preview
}

// view copies what a page shows of d, the payload cut to previewLimit.
func (c *Console) view(position int, d *messaging.Delivery, previewLimit int) messageView {
	e := d.Envelope()
	reason := c.redact(e.Error)
	v := messageView{
		Position: position, ID: e.MessageID, Type: e.MessageType, CorrelationID: e.CorrelationID,
		CausationID: e.CausationID, Origin: e.Origin, Reason: bounded(reason, 4<<10), Group: groupKey(fold(reason)),
		Attempt: e.Attempt, Version: e.Version, FirstSeen: e.FirstSeen, Timestamp: e.Timestamp,
		Redelivered: d.Redelivered, ContentType: e.ContentType, ContentEncoding: e.ContentEncoding,
		RoutingKey: d.RoutingKey, Preview: previewOf(d.Payload, previewLimit),
	}
	v.Preview.Text = c.redact(v.Preview.Text)
	for name, value := range d.Headers {
		text := wire.Text(value)
		if text == "" && value != nil {
			text = fmt.Sprint(value)
		}
		v.Headers = append(v.Headers, header{Name: bounded(name, 128), Value: c.redact(bounded(text, 512))})
		if len(v.Headers) == 64 {
			break
		}
	}
	sort.Slice(v.Headers, func(i, j int) bool { return v.Headers[i].Name < v.Headers[j].Name })
	return v
}

// seenAt is when a message was first seen, else when it was published.
func seenAt(d *messaging.Delivery) time.Time {
	if !d.FirstSeen.IsZero() {
		return d.FirstSeen
	}
	return d.Timestamp
}

// reasonOf is the folded key of d's reason, as the groups and the replay
// filter of a group compute it.
func (c *Console) reasonOf(d *messaging.Delivery) string {
	return groupKey(fold(c.redact(d.Error)))
}

// survey is what a set-aside queue's page shows: its groups among the
// messages read, and the first page of them.
type survey struct {
	Scan     scanned
	Groups   []group
	Overflow int
	Page     []messageView
	Matched  int // messages read that belong to the page's group (all, for the queue page)
}

// surveyQueue reads queue within the page's bounds, grouping every message
// read by reason and keeping the page-th page of those in groupKey ("" for
// all). The page holds at most PageSize messages; nothing else is kept.
func (c *Console) surveyQueue(ctx context.Context, queue, groupKey string, page int) (survey, error) {
	grouping := newGrouping()
	var s survey
	skip := max(page-1, 0) * c.config.pageSize
	scan, err := c.scan(ctx, queue, c.config.scanLimit, c.config.scanBudget, func(position int, d *messaging.Delivery) bool {
		grouping.add(c.redact(d.Error), seenAt(d))
		if groupKey != "" && c.reasonOf(d) != groupKey {
			return true
		}
		s.Matched++
		if s.Matched > skip && len(s.Page) < c.config.pageSize {
			s.Page = append(s.Page, c.view(position, d, listPreview))
		}
		return true
	})
	s.Scan, s.Groups, s.Overflow = scan, grouping.groups(), grouping.overflow
	return s, err
}

// find reads queue from its head until the message with id, within the
// page's bounds, and returns its full view.
func (c *Console) find(ctx context.Context, queue, id string) (messageView, scanned, bool, error) {
	var found messageView
	ok := false
	scan, err := c.scan(ctx, queue, c.config.scanLimit, c.config.scanBudget, func(position int, d *messaging.Delivery) bool {
		if d.MessageID != id {
			return true
		}
		found, ok = c.view(position, d, detailPreview), true
		return false
	})
	return found, scan, ok, err
}
