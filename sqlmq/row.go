package sqlmq

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
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

// columns are the stored fields of a dispatch, in insert order.
const columns = "message_id, topic, routing_key, correlation_id, causation_id, reply_to, message_type, " +
	"message_version, content_type, content_encoding, envelope_attempt, first_seen_us, origin, error_reason, " +
	"claim, route, route_position, route_id, expiration_ms, sent_us, is_transient, headers, payload, created_us"

const columnCount = 24

// normalize fills what the outbox must fix at store time (message id, first
// seen, timestamp, mandatory) and rounds every field to what the row can hold,
// so the live path publishes exactly what a recovered row would.
func normalize(d messaging.Dispatch, now time.Time) (messaging.Dispatch, error) {
	if d.Message != nil && len(d.Payload) == 0 {
		return d, fmt.Errorf("sqlmq: a dispatch of %T has no Payload; wrap the outbox connector with serialization.New so messages are encoded before they are stored", d.Message)
	}
	if d.MessageID == "" {
		d.MessageID = messaging.NewID()
	}
	now = now.UTC().Truncate(time.Microsecond)
	if d.FirstSeen.IsZero() {
		d.FirstSeen = now
	}
	d.FirstSeen = d.FirstSeen.UTC().Truncate(time.Microsecond)
	if d.Timestamp.IsZero() {
		d.Timestamp = now
	}
	d.Timestamp = d.Timestamp.UTC().Truncate(time.Microsecond)
	d.Expiration = time.Duration(d.Expiration.Milliseconds()) * time.Millisecond
	d.Mandatory = true
	// The table has no column for Verbatim: a stored row publishes as an
	// application's dispatch (Write checked it as one).
	d.Verbatim = false
	d.Message = nil
	if d.Payload == nil {
		d.Payload = []byte{}
	}
	if len(d.Route) == 0 {
		d.Route = nil
	} else {
		d.Route = append([]string(nil), d.Route...)
	}
	text, ok, err := encodeHeaders(d.Headers)
	if err != nil {
		return d, err
	}
	if d.Headers, err = decodeHeaders(text, ok); err != nil {
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
	var route sql.NullString
	if len(d.Route) > 0 {
		raw, err := json.Marshal(d.Route)
		if err != nil {
			return nil, fmt.Errorf("sqlmq: encode route: %w", err)
		}
		route = sql.NullString{String: string(raw), Valid: true}
	}
	return []any{
		d.MessageID, d.Topic, d.RoutingKey, d.CorrelationID, d.CausationID, d.ReplyTo, d.MessageType,
		int64(d.Version), d.ContentType, d.ContentEncoding, int64(d.Attempt), microsOrZero(d.FirstSeen), d.Origin,
		sql.NullString{String: d.Error, Valid: d.Error != ""},
		d.Claim, route, int64(d.RoutePosition), d.RouteID, d.Expiration.Milliseconds(), microsOrZero(d.Timestamp),
		d.Transient, sql.NullString{String: headers, Valid: ok}, d.Payload, micros(created),
	}, nil
}

func microsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}

// selectColumns reads a row back for publishing.
const selectColumns = "id, " + columns + ", publish_attempts"

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
		r                                    row
		d                                    messaging.Dispatch
		version, attempt, position           int64
		firstSeen, expiration, sent, created int64
		errorReason, route, headers          sql.NullString
		transient                            bool
		publishAttempts                      int64
	)
	err := s.Scan(&r.id, &d.MessageID, &d.Topic, &d.RoutingKey, &d.CorrelationID, &d.CausationID, &d.ReplyTo,
		&d.MessageType, &version, &d.ContentType, &d.ContentEncoding, &attempt, &firstSeen, &d.Origin,
		&errorReason, &d.Claim, &route, &position, &d.RouteID, &expiration, &sent, &transient, &headers,
		&d.Payload, &created, &publishAttempts)
	if err != nil {
		return r, fmt.Errorf("sqlmq: read an outbox row: %w", err)
	}
	d.Version, d.Attempt, d.RoutePosition = int(version), int(attempt), int(position)
	d.FirstSeen, d.Timestamp = fromMicros(firstSeen), fromMicros(sent)
	d.Expiration = time.Duration(expiration) * time.Millisecond
	d.Transient, d.Mandatory = transient, true
	d.Error = errorReason.String
	if route.Valid {
		if err := json.Unmarshal([]byte(route.String), &d.Route); err != nil {
			return r, unreadableRow{id: r.id, err: fmt.Errorf("malformed route: %w", err)}
		}
		if len(d.Route) == 0 {
			d.Route = nil
		}
	}
	if d.Headers, err = decodeHeaders(headers.String, headers.Valid); err != nil {
		return r, unreadableRow{id: r.id, err: err}
	}
	if d.Payload == nil {
		d.Payload = []byte{}
	}
	r.dispatch, r.created, r.attempts = d, fromMicros(created), int(publishAttempts)
	return r, nil
}

// clone copies a dispatch deeply enough that the processor and the caller never
// share a map or slice.
func clone(d messaging.Dispatch) messaging.Dispatch {
	d.Headers = maps.Clone(d.Headers)
	d.Route = append([]string(nil), d.Route...)
	if len(d.Route) == 0 {
		d.Route = nil
	}
	return d
}
