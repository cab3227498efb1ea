package memory

import (
	"bytes"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// message is a published message as the broker holds it: the envelope with
// every default filled and every value copied, so the publisher cannot change it.
type message struct {
	exchange    string
	routingKey  string
	envelope    messaging.Dispatch
	redelivered bool
	expiresAt   time.Time // zero: never
	refused     error     // why the write refused this dispatch (wire.Check); never held in a queue
}

// envelopeOf fills the transport's defaults into a copy of dispatch and makes
// it what the RabbitMQ transport puts on the wire and reads back: reserved or
// untransmittable headers are refused, header values take their AMQP types,
// and the envelope fields go through the wire contract's own encoding and
// decoding (wire.Encode, wire.Decode), so that their defaults and rounding
// (first seen to milliseconds, expiration up to whole milliseconds, version and
// attempt at least 1, a route comma-joined) are the RabbitMQ transport's; the
// timestamp keeps whole seconds, as an AMQP timestamp does.
func envelopeOf(dispatch messaging.Dispatch, now time.Time, origin string) (messaging.Dispatch, error) {
	e := dispatch
	headers, err := wireHeaders(e.Headers)
	if err != nil {
		return messaging.Dispatch{}, err
	}
	e.Headers = nil
	fields, props := wire.Encode(e, now, origin)
	read := messaging.Delivery{RoutingKey: e.RoutingKey}
	wire.Decode(fields, props, &read)

	e.Headers = headers
	e.MessageID = read.MessageID
	e.CorrelationID = read.CorrelationID
	e.CausationID = read.CausationID
	e.MessageType = read.MessageType
	e.Version = read.Version
	e.Attempt = read.Attempt
	e.FirstSeen = read.FirstSeen
	e.Origin = read.Origin
	e.Error = read.Error
	e.Claim = read.Claim
	e.Route = read.Route
	e.RoutePosition = read.RoutePosition
	e.RouteID = read.RouteID
	e.Expiration = read.Expiration
	e.Timestamp = time.Unix(props.Timestamp.Unix(), 0).UTC()
	e.Payload = bytes.Clone(e.Payload)
	e.Message = nil
	return e, nil
}

// wireHeaders copies the application's headers as an AMQP table carries them
// (wire.Check has refused reserved names and values a table cannot hold).
func wireHeaders(headers map[string]any) (map[string]any, error) {
	if len(headers) == 0 {
		return nil, nil
	}
	copied := make(map[string]any, len(headers))
	for name, value := range headers {
		converted, err := wireValue(value)
		if err != nil {
			return nil, fmt.Errorf("memory: header %q cannot travel in an AMQP table (%w); use strings, numbers, booleans, times, []byte or nested amqp091.Table values", name, err)
		}
		copied[name] = converted
	}
	return copied, nil
}

// wireValue returns value as it arrives after a trip through an AMQP table:
// an int becomes an int32 (the client writes it as one), a time keeps whole
// seconds, slices and tables are copied, and a nested map[string]any arrives
// as an amqp.Table (the RabbitMQ transport sends it as one).
func wireValue(value any) (any, error) {
	switch v := value.(type) {
	case nil, bool, uint8, int8, int16, int32, int64, uint16, uint32, float32, float64, string, amqp.Decimal:
		return v, nil
	case int:
		return int32(v), nil
	case time.Time:
		return time.Unix(v.Unix(), 0), nil
	case []byte:
		return bytes.Clone(v), nil
	case []any:
		copied := make([]any, len(v))
		for i, inner := range v {
			converted, err := wireValue(inner)
			if err != nil {
				return nil, fmt.Errorf("in array %w", err)
			}
			copied[i] = converted
		}
		return copied, nil
	case amqp.Table:
		return wireTable(v)
	case map[string]any:
		return wireTable(v)
	}
	return nil, fmt.Errorf("value %T not supported", value)
}

func wireTable(table map[string]any) (amqp.Table, error) {
	copied := make(amqp.Table, len(table))
	for name, inner := range table {
		converted, err := wireValue(inner)
		if err != nil {
			return nil, fmt.Errorf("table field %q %w", name, err)
		}
		copied[name] = converted
	}
	return copied, nil
}

// delivery turns a held message into what a consumer reads; every mutable value
// is copied again so consumers of different queues cannot affect one another.
func (m *message) delivery(queue string, tag uint64) messaging.Delivery {
	e := m.envelope
	return messaging.Delivery{
		DeliveryID:      tag,
		SourceQueue:     queue,
		Topic:           m.exchange,
		RoutingKey:      m.routingKey,
		Redelivered:     m.redelivered,
		MessageID:       e.MessageID,
		CorrelationID:   e.CorrelationID,
		CausationID:     e.CausationID,
		ReplyTo:         e.ReplyTo,
		MessageType:     e.MessageType,
		Version:         e.Version,
		ContentType:     e.ContentType,
		ContentEncoding: e.ContentEncoding,
		Attempt:         e.Attempt,
		FirstSeen:       e.FirstSeen,
		Origin:          e.Origin,
		Error:           e.Error,
		Claim:           e.Claim,
		Route:           cloneStrings(e.Route),
		RoutePosition:   e.RoutePosition,
		RouteID:         e.RouteID,
		Expiration:      e.Expiration,
		Timestamp:       e.Timestamp,
		Durable:         !e.Transient,
		Headers:         copyHeaders(e.Headers),
		Payload:         bytes.Clone(e.Payload),
	}
}

// copyFor returns a copy of m to hold in another queue.
func (m *message) copyFor() *message {
	c := *m
	return &c
}

func cloneStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}

// copyHeaders deep-copies wire headers for a consumer; nil when there are
// none, as the RabbitMQ transport gives them.
func copyHeaders(headers map[string]any) map[string]any {
	if len(headers) == 0 {
		return nil
	}
	copied := make(map[string]any, len(headers))
	for name, value := range headers {
		copied[name] = copyValue(value)
	}
	return copied
}

// copyValue copies the mutable values a wire header can hold.
func copyValue(value any) any {
	switch v := value.(type) {
	case []byte:
		return bytes.Clone(v)
	case []any:
		copied := make([]any, len(v))
		for i, inner := range v {
			copied[i] = copyValue(inner)
		}
		return copied
	case amqp.Table:
		copied := make(amqp.Table, len(v))
		for name, inner := range v {
			copied[name] = copyValue(inner)
		}
		return copied
	}
	return value
}
