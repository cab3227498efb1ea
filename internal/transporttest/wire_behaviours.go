package transporttest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// overLong is 300 bytes that fit a varchar(255) column (100 runes) but not an
// AMQP short string (255 bytes).
var overLong = strings.Repeat("€", 100)

// wireCase is a dispatch that cannot travel, and how its refusal names it.
type wireCase struct {
	name  string
	field string // FieldError.Field must contain it
	limit int    // FieldError.Limit; 0 when the problem is the value's type
	build func(queue string) messaging.Dispatch
}

func (h *harness) wireCases() []wireCase {
	if h.target.MaxPayload <= 0 {
		h.t.Fatalf("the target does not say which maximum payload its connector was configured with; set Target.MaxPayload")
	}
	bad := func(queue, payload string) messaging.Dispatch { return toQueue(queue, payload) }
	return []wireCase{
		{"a 300-byte message id", "MessageID", wire.MaxShortString, func(q string) messaging.Dispatch {
			d := bad(q, "bad id")
			d.MessageID = overLong
			return d
		}},
		{"a 300-byte routing key", "RoutingKey", wire.MaxShortString, func(string) messaging.Dispatch {
			return messaging.Dispatch{RoutingKey: overLong, Payload: []byte("bad key"), Mandatory: true}
		}},
		{"a 300-byte correlation id", "CorrelationID", wire.MaxShortString, func(q string) messaging.Dispatch {
			d := bad(q, "bad correlation")
			d.CorrelationID = overLong
			return d
		}},
		{"a 300-byte content type", "ContentType", wire.MaxShortString, func(q string) messaging.Dispatch {
			d := bad(q, "bad content type")
			d.ContentType = overLong
			return d
		}},
		{"a 300-byte message type", "MessageType", wire.MaxShortString, func(q string) messaging.Dispatch {
			d := bad(q, "bad type")
			d.MessageType = overLong
			return d
		}},
		{"a 300-byte header name", "header name", wire.MaxShortString, func(q string) messaging.Dispatch {
			d := bad(q, "bad header name")
			d.Headers = map[string]any{"x-" + overLong: "v"}
			return d
		}},
		{"a header value of an unsupported type", `header "x-odd"`, 0, func(q string) messaging.Dispatch {
			d := bad(q, "bad header value")
			d.Headers = map[string]any{"x-odd": struct{ Unsupported bool }{}}
			return d
		}},
		{"a payload over the configured maximum", "Payload", h.target.MaxPayload, func(q string) messaging.Dispatch {
			d := bad(q, "")
			d.Payload = make([]byte, h.target.MaxPayload+1)
			return d
		}},
	}
}

// checkRefusedAlone asserts that err refuses result index 1 alone, with a
// FieldError that names c's field and limit.
func (h *harness) checkRefusedAlone(c wireCase, err error) {
	h.t.Helper()
	if !errors.Is(err, messaging.ErrWireLimit) {
		h.t.Fatalf("%s: error %v; want messaging.ErrWireLimit", c.name, err)
	}
	var publishErr *messaging.PublishError
	if !errors.As(err, &publishErr) || len(publishErr.Results) != 3 {
		h.t.Fatalf("%s: error %v; want a *messaging.PublishError with a result per dispatch", c.name, err)
	}
	for i, r := range publishErr.Results {
		if (i == 1) != (r.Err != nil) {
			h.t.Fatalf("%s: result %d is %+v; only the middle dispatch must fail", c.name, i, r)
		}
	}
	var field *messaging.FieldError
	if !errors.As(publishErr.Results[1].Err, &field) {
		h.t.Fatalf("%s: %v; want a *messaging.FieldError", c.name, publishErr.Results[1].Err)
	}
	if !strings.Contains(field.Field, c.field) || field.Limit != c.limit {
		h.t.Fatalf("%s: FieldError names field %q with limit %d; want %q and %d (%v)", c.name, field.Field, field.Limit, c.field, c.limit, field)
	}
}

// A write of [good, bad, good] publishes both good dispatches and refuses the
// bad one alone with ErrWireLimit; the connection and its stream carry on.
func wireLimitRefusesAlone(h *harness) {
	h.refusedAlone(func(conn messaging.Connection) func(c wireCase, dispatches ...messaging.Dispatch) error {
		w := h.openWriter(conn)
		h.t.Cleanup(func() { _ = w.Close() })
		return func(c wireCase, dispatches ...messaging.Dispatch) error {
			n, err := w.Write(h.context(), dispatches...)
			if n != 2 {
				h.t.Fatalf("%s: write [good, bad, good] landed %d (%v); want 2", c.name, n, err)
			}
			return err
		}
	})
}

// The same through a CommitWriter: Write buffers, Commit reports the refusal
// and publishes the rest of the batch.
func wireLimitRefusesAloneOnCommit(h *harness) {
	h.refusedAlone(func(conn messaging.Connection) func(c wireCase, dispatches ...messaging.Dispatch) error {
		w := h.openCommitWriter(conn)
		h.t.Cleanup(func() { _ = w.Close() })
		return func(c wireCase, dispatches ...messaging.Dispatch) error {
			if _, err := w.Write(h.context(), dispatches...); err != nil {
				h.t.Fatalf("%s: a CommitWriter's Write buffers and reports a refusal at Commit; got %v", c.name, err)
			}
			return w.Commit()
		}
	})
}

// refusedAlone sends [good, bad, good] for every wire case through the sender
// open returns, checks the refusal, and reads both good dispatches on a stream
// of the same connection.
func (h *harness) refusedAlone(open func(messaging.Connection) func(c wireCase, dispatches ...messaging.Dispatch) error) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 2)
	send := open(conn)
	for _, c := range h.wireCases() {
		before, after := toQueue(queue, c.name+" before"), toQueue(queue, c.name+" after")
		h.checkRefusedAlone(c, send(c, before, c.build(queue), after))
		for _, want := range []string{c.name + " before", c.name + " after"} {
			d := h.read(s)
			if string(d.Payload) != want {
				h.t.Fatalf("%s: read %q; want %q", c.name, d.Payload, want)
			}
			h.acknowledge(s, d)
		}
	}
	h.nothing(s)
}

// An application header in the reserved namespace refuses that dispatch
// alone, with the wire contract's error.
func reservedHeader(h *harness) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 2)
	w := h.openWriter(conn)
	defer func() { _ = w.Close() }()
	spoof := messaging.Dispatch{RoutingKey: queue, Headers: map[string]any{"x-acemq-id": "spoof"}, Payload: []byte("spoof"), Mandatory: true}
	n, err := w.Write(h.context(), toQueue(queue, "before"), spoof, toQueue(queue, "after"))
	var publishErr *messaging.PublishError
	if n != 2 || !errors.As(err, &publishErr) || len(publishErr.Failed()) != 1 ||
		publishErr.Results[1].Err == nil || !strings.Contains(publishErr.Results[1].Err.Error(), wire.ReservedHeaderError("x-acemq-id").Error()) {
		h.t.Fatalf("write [good, reserved header, good] = %d, %v; want 2 and the reserved-header error for the middle one alone", n, err)
	}
	for _, want := range []string{"before", "after"} {
		if d := h.read(s); string(d.Payload) != want {
			h.t.Fatalf("read %q; want %q", d.Payload, want)
		}
	}
	h.nothing(s)
}

// A Verbatim copy (Delivery.Redispatch) whose id, correlation and type are too
// long for their AMQP properties is published, and read back whole.
func verbatimCopyTravels(h *harness) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 1)
	long := func(what string) string { return fmt.Sprintf("%s-%s", what, overLong) }
	copied := toQueue(queue, "set aside")
	copied.MessageID, copied.CorrelationID, copied.MessageType = long("id"), long("correlation"), long("type")
	copied.Verbatim = true
	h.write(conn, copied)

	d := h.read(s)
	h.acknowledge(s, d)
	if d.MessageID != copied.MessageID || d.CorrelationID != copied.CorrelationID || d.MessageType != copied.MessageType {
		h.t.Fatalf("read id %q, correlation %q, type %q; want the Verbatim copy's whole values", wire.Shorten(d.MessageID), wire.Shorten(d.CorrelationID), wire.Shorten(d.MessageType))
	}
}

// A Verbatim copy whose id is too long for the message-id property, sent to
// a queue that does not exist, is reported unroutable: the broker's return
// of it carries the id in its header only.
func verbatimCopyUnroutable(h *harness) {
	missing := h.queue() // named, never declared
	copied := toQueue(missing, "set aside")
	copied.MessageID, copied.Verbatim = "id-"+overLong, true
	w := h.openWriter(h.connect())
	defer func() { _ = w.Close() }()

	n, err := w.Write(h.context(), copied)

	if n != 0 || !errors.Is(err, messaging.ErrUnroutable) {
		h.t.Fatalf("write of an unroutable Verbatim copy with a %d-byte id = %d, %v; want 0 and an error matching messaging.ErrUnroutable", len(copied.MessageID), n, err)
	}
}
