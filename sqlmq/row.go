package sqlmq

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"time"

	"github.com/warrenmq/messaging"
)

// row is one outbox row: a dispatch ready to publish, and its bookkeeping.
type row struct {
	id       int64
	dispatch messaging.Dispatch
	created  time.Time
	attempts int
	// leaseUntil is when this instance's lease on the row ends, as set by the
	// commit that stored it; zero for a row read back from storage, whose lease
	// is renewed before every publish.
	leaseUntil time.Time
}

// envelopeColumns says where each field of messaging.Envelope is stored, in
// the order of the Envelope's fields: the one list of them in the outbox.
// How a value is held follows from its Go type (see storage). The columns
// are the same since the first release; a field added to the Envelope
// without a column here stops the package from loading, so its tests fail.
var envelopeColumns = plan([]struct{ field, column string }{
	{"MessageID", "message_id"}, {"CorrelationID", "correlation_id"}, {"CausationID", "causation_id"},
	{"ReplyTo", "reply_to"}, {"MessageType", "message_type"}, {"Version", "message_version"},
	{"ContentType", "content_type"}, {"ContentEncoding", "content_encoding"}, {"Attempt", "envelope_attempt"},
	{"FirstSeen", "first_seen_us"}, {"Origin", "origin"}, {"Error", "error_reason"}, {"Claim", "claim"},
	{"Route", "route"}, {"RoutePosition", "route_position"}, {"RouteID", "route_id"},
	{"Expiration", "expiration_ms"}, {"Timestamp", "sent_us"},
})

// storage is how a column holds an envelope field.
type storage int

const (
	text         storage = iota // a string, never NULL
	optionalText                // a string, NULL when empty
	integer                     // an int
	instant                     // a time.Time, in microseconds since the Unix epoch; 0 is none
	milliseconds                // a time.Duration
	list                        // a []string, as JSON; NULL when empty
)

// envelopeColumn is one stored field of the envelope.
type envelopeColumn struct {
	column  string
	index   int // of the field in messaging.Envelope
	storage storage
}

// plan resolves the fields of envelopeColumns; it panics, at package load,
// when the list and messaging.Envelope disagree.
func plan(fields []struct{ field, column string }) []envelopeColumn {
	envelope := reflect.TypeFor[messaging.Envelope]()
	if len(fields) != envelope.NumField() {
		panic(fmt.Sprintf("sqlmq: %d envelope columns for the %d fields of messaging.Envelope", len(fields), envelope.NumField()))
	}
	out := make([]envelopeColumn, len(fields))
	for i, f := range fields {
		field, ok := envelope.FieldByName(f.field)
		if !ok {
			panic("sqlmq: messaging.Envelope has no field " + f.field)
		}
		c := envelopeColumn{column: f.column, index: field.Index[0]}
		switch field.Type {
		case reflect.TypeFor[string]():
			c.storage = text
			if f.column == "error_reason" {
				c.storage = optionalText
			}
		case reflect.TypeFor[int]():
			c.storage = integer
		case reflect.TypeFor[time.Time]():
			c.storage = instant
		case reflect.TypeFor[time.Duration]():
			c.storage = milliseconds
		case reflect.TypeFor[[]string]():
			c.storage = list
		default:
			panic(fmt.Sprintf("sqlmq: no column type for messaging.Envelope.%s, a %s", f.field, field.Type))
		}
		out[i] = c
	}
	return out
}

// columns are the stored fields of a dispatch, in insert order: the
// envelope's, then the address, the flags, the headers, the body and when the
// row was made.
var columns = envelopeColumnList() + ", topic, routing_key, is_transient, headers, payload, created_us"

// columnCount is how many values columns binds.
var columnCount = len(envelopeColumns) + 6

func envelopeColumnList() string {
	names := make([]string, len(envelopeColumns))
	for i, c := range envelopeColumns {
		names[i] = c.column
	}
	return strings.Join(names, ", ")
}

// selectColumns reads a row back for publishing.
var selectColumns = "id, " + columns + ", publish_attempts"

// normalize fills what the outbox must fix at store time (message id, first
// seen, timestamp, mandatory) and then passes the envelope through the row's
// own encoding and back, so the live path publishes exactly what a recovered
// row would: times in UTC microseconds, the expiration in milliseconds, an
// empty route as none, headers as they read back.
func normalize(d messaging.Dispatch, now time.Time) (messaging.Dispatch, error) {
	if d.Message != nil && len(d.Payload) == 0 {
		return d, fmt.Errorf("sqlmq: a dispatch of %T has no Payload; wrap the outbox connector with serialization.New so messages are encoded before they are stored", d.Message)
	}
	e := d.Envelope()
	if e.MessageID == "" {
		e.MessageID = messaging.NewID()
	}
	if e.FirstSeen.IsZero() {
		e.FirstSeen = now
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = now
	}
	stored, err := encodeEnvelope(e)
	if err != nil {
		return d, err
	}
	if e, err = decodeEnvelope(stored); err != nil {
		return d, err
	}
	d.SetEnvelope(e)
	d.Mandatory = true
	// The table has no column for Verbatim: a stored row publishes as an
	// application's dispatch (Write checked it as one).
	d.Verbatim = false
	d.Message = nil
	if d.Payload == nil {
		d.Payload = []byte{}
	}
	headers, ok, err := encodeHeaders(d.Headers)
	if err != nil {
		return d, err
	}
	if d.Headers, err = decodeHeaders(headers, ok); err != nil {
		return d, err
	}
	return d, nil
}

// values returns the insert arguments for a normalized dispatch, in the order
// of columns.
func values(d messaging.Dispatch, created time.Time) ([]any, error) {
	headers, ok, err := encodeHeaders(d.Headers)
	if err != nil {
		return nil, err
	}
	stored, err := encodeEnvelope(d.Envelope())
	if err != nil {
		return nil, err
	}
	return append(stored, d.Topic, d.RoutingKey, d.Transient, sql.NullString{String: headers, Valid: ok}, d.Payload, micros(created)), nil
}

// encodeEnvelope returns the envelope's column values, in the order of
// envelopeColumns: texts, integers, times in microseconds since the Unix
// epoch (0 for none), durations in milliseconds, a list as JSON.
func encodeEnvelope(e messaging.Envelope) ([]any, error) {
	v := reflect.ValueOf(e)
	out := make([]any, len(envelopeColumns))
	for i, c := range envelopeColumns {
		field := v.Field(c.index)
		switch c.storage {
		case text:
			out[i] = field.String()
		case optionalText:
			out[i] = sql.NullString{String: field.String(), Valid: field.String() != ""}
		case integer:
			out[i] = field.Int()
		case instant:
			out[i] = microsOrZero(field.Interface().(time.Time))
		case milliseconds:
			out[i] = time.Duration(field.Int()).Milliseconds()
		case list:
			out[i] = sql.NullString{}
			if field.Len() > 0 {
				raw, err := json.Marshal(field.Interface())
				if err != nil {
					return nil, fmt.Errorf("sqlmq: store %s: %w", c.column, err)
				}
				out[i] = sql.NullString{String: string(raw), Valid: true}
			}
		}
	}
	return out, nil
}

// decodeEnvelope is encodeEnvelope read back. stored holds, per column, what
// encodeEnvelope returned or the scan destinations of envelopeTargets.
func decodeEnvelope(stored []any) (messaging.Envelope, error) {
	var e messaging.Envelope
	v := reflect.ValueOf(&e).Elem()
	for i, c := range envelopeColumns {
		field := v.Field(c.index)
		var number int64
		var content sql.NullString
		switch value := stored[i].(type) {
		case string:
			content = sql.NullString{String: value, Valid: true}
		case *sql.NullString:
			content = *value
		case sql.NullString:
			content = value
		case int64:
			number = value
		case *int64:
			number = *value
		}
		switch c.storage {
		case text, optionalText:
			field.SetString(content.String)
		case integer:
			field.SetInt(number)
		case instant:
			field.Set(reflect.ValueOf(fromMicros(number)))
		case milliseconds:
			field.SetInt(int64(time.Duration(number) * time.Millisecond))
		case list:
			var route []string
			if content.Valid {
				if err := json.Unmarshal([]byte(content.String), &route); err != nil {
					return e, fmt.Errorf("malformed %s: %w", c.column, err)
				}
			}
			if len(route) > 0 {
				field.Set(reflect.ValueOf(route))
			}
		}
	}
	return e, nil
}

// envelopeTargets are the scan destinations of the envelope's columns: text
// columns scan into sql.NullString (a hand-written NULL reads as empty),
// number columns into int64.
func envelopeTargets() []any {
	targets := make([]any, len(envelopeColumns))
	for i, c := range envelopeColumns {
		switch c.storage {
		case text, optionalText, list:
			targets[i] = new(sql.NullString)
		default:
			targets[i] = new(int64)
		}
	}
	return targets
}

func microsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}

type scanner interface {
	Scan(dest ...any) error
}

// unreadableRow is a stored row whose columns were read but cannot be turned
// back into a dispatch (a hand-edited row, a newer writer's header encoding): it
// is retired with the reason, so it cannot hold up the rows behind it.
type unreadableRow struct {
	id  int64
	err error
}

func (u unreadableRow) Error() string {
	return fmt.Sprintf("sqlmq: outbox row %d cannot be read back: %v", u.id, u.err)
}

func (u unreadableRow) Unwrap() error { return u.err }

func scanRow(s scanner) (row, error) {
	var (
		r                     row
		d                     messaging.Dispatch
		envelope              = envelopeTargets()
		headers               sql.NullString
		created, publishCount int64
	)
	targets := append([]any{&r.id}, envelope...)
	targets = append(targets, &d.Topic, &d.RoutingKey, &d.Transient, &headers, &d.Payload, &created, &publishCount)
	if err := s.Scan(targets...); err != nil {
		return r, fmt.Errorf("sqlmq: read an outbox row: %w", err)
	}
	e, err := decodeEnvelope(envelope)
	if err != nil {
		return r, unreadableRow{id: r.id, err: err}
	}
	d.SetEnvelope(e)
	d.Mandatory = true
	if d.Headers, err = decodeHeaders(headers.String, headers.Valid); err != nil {
		return r, unreadableRow{id: r.id, err: err}
	}
	if d.Payload == nil {
		d.Payload = []byte{}
	}
	r.dispatch, r.created, r.attempts = d, fromMicros(created), int(publishCount)
	return r, nil
}

// clone copies a dispatch deeply enough that the processor and the caller never
// share a map or slice.
func clone(d messaging.Dispatch) messaging.Dispatch {
	d.SetEnvelope(d.Envelope().Clone())
	d.Headers = maps.Clone(d.Headers)
	return d
}
