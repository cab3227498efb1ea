package rabbitmq

import (
	"math"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// The envelope headers of the AceMQ wire contract. Every header under the reserved
// prefix is removed from Delivery.Headers on consume.
const (
	headerID               = "x-acemq-id"
	headerType             = "x-acemq-type"
	headerVersion          = "x-acemq-version"
	headerCorrelation      = "x-acemq-correlation"
	headerCausation        = "x-acemq-causation"
	headerAttempt          = "x-acemq-attempt"
	headerFirstSeen        = "x-acemq-first-seen"
	headerOrigin           = "x-acemq-origin"
	headerError            = "x-acemq-error"
	headerClaim            = "x-acemq-claim"
	headerRoute            = "x-acemq-route"
	headerRoutePosition    = "x-acemq-route-position"
	headerRouteID          = "x-acemq-route-id"
	deliveryModeTransient  = amqp.Transient
	deliveryModePersistent = amqp.Persistent
)

// outgoing is a Dispatch encoded for basic.publish.
type outgoing struct {
	id        string
	exchange  string
	key       string
	mandatory bool
	msg       amqp.Publishing
	// refused is why this dispatch was not encoded (wire.Check refused it):
	// the publisher answers it with this error and sends the others.
	refused error
}

// encodeDispatch writes d as AMQP properties and envelope headers, filling the
// envelope defaults: a new id, correlation = id, type = routing key, version and
// attempt 1, first seen = now, origin = defaultOrigin. It first runs wire.Check
// with maxPayload (<= 0: wire.DefaultMaxPayload), so that nothing the broker
// would refuse, or that would make the client close the connection, is encoded:
// such a dispatch returns the check's *messaging.FieldError (ErrWireLimit) or
// the reserved-header error.
func encodeDispatch(d messaging.Dispatch, now time.Time, defaultOrigin string, maxPayload int) (outgoing, error) {
	if err := wire.Check(d, maxPayload); err != nil {
		return outgoing{}, err
	}
	headers := make(amqp.Table, len(d.Headers)+12)
	for name, value := range d.Headers {
		headers[name] = tableValue(value)
	}

	id := d.MessageID
	if id == "" {
		id = messaging.NewID()
	}
	correlation := d.CorrelationID
	if correlation == "" {
		correlation = id
	}
	messageType := d.MessageType
	if messageType == "" {
		messageType = d.RoutingKey
	}
	firstSeen := d.FirstSeen
	if firstSeen.IsZero() {
		firstSeen = now
	}
	origin := d.Origin
	if origin == "" {
		origin = defaultOrigin
	}
	timestamp := d.Timestamp
	if timestamp.IsZero() {
		timestamp = now
	}

	headers[headerID] = id
	if messageType != "" {
		headers[headerType] = messageType
	}
	headers[headerVersion] = atLeastOne(d.Version)
	headers[headerCorrelation] = correlation
	putString(headers, headerCausation, d.CausationID)
	headers[headerAttempt] = atLeastOne(d.Attempt)
	headers[headerFirstSeen] = firstSeen.UnixMilli()
	putString(headers, headerOrigin, origin)
	putString(headers, headerError, d.Error)
	putString(headers, headerClaim, d.Claim)
	if len(d.Route) > 0 {
		headers[headerRoute] = strings.Join(d.Route, ",")
		headers[headerRoutePosition] = clampInt32(max(d.RoutePosition, 0))
		putString(headers, headerRouteID, d.RouteID)
	}

	mode := deliveryModePersistent
	if d.Transient {
		mode = deliveryModeTransient
	}
	return outgoing{
		id:        id,
		exchange:  d.Topic,
		key:       d.RoutingKey,
		mandatory: d.Mandatory,
		msg: amqp.Publishing{
			Headers:         headers,
			ContentType:     d.ContentType,
			ContentEncoding: d.ContentEncoding,
			DeliveryMode:    mode,
			CorrelationId:   propertyOf(correlation),
			ReplyTo:         d.ReplyTo,
			Expiration:      expirationMillis(d.Expiration),
			MessageId:       propertyOf(id),
			Timestamp:       timestamp,
			Type:            propertyOf(d.MessageType),
			Body:            d.Payload,
		},
	}, nil
}

// tableValue returns value as amqp091 writes it: a nested map[string]any (which
// wire.Check accepts and amqp091 does not) becomes an amqp.Table, in arrays and
// tables too. Everything else is returned as is.
func tableValue(value any) any {
	switch v := value.(type) {
	case map[string]any:
		table := make(amqp.Table, len(v))
		for name, item := range v {
			table[name] = tableValue(item)
		}
		return table
	case amqp.Table: // copied too: a map[string]any may be nested in it
		return tableValue(map[string]any(v))
	case []any:
		items := make([]any, len(v))
		for i, item := range v {
			items[i] = tableValue(item)
		}
		return items
	default:
		return value
	}
}

// propertyOf is value when it fits an AMQP short-string property, else empty:
// only a Verbatim copy passes the wire check with a longer id, correlation or
// type, and its x-acemq- header carries the value whole.
func propertyOf(value string) string {
	if wire.FitsProperty(value) {
		return value
	}
	return ""
}

func putString(headers amqp.Table, name, value string) {
	if value != "" {
		headers[name] = value
	}
}

func atLeastOne(value int) int32 { return clampInt32(max(value, 1)) }

func clampInt32(value int) int32 {
	return int32(min(max(value, math.MinInt32), math.MaxInt32))
}

// expirationMillis renders a TTL as the decimal milliseconds AMQP expects,
// rounding a sub-millisecond remainder up so a short TTL never becomes "0".
func expirationMillis(ttl time.Duration) string {
	if ttl <= 0 {
		return ""
	}
	ms := ttl / time.Millisecond
	if ttl%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(int64(ms), 10)
}

// decodeDelivery reads an AMQP delivery into target, tolerantly: each envelope
// field comes from its header, else its property, else its default. Every
// x-acemq- header is removed from target.Headers.
func decodeDelivery(source amqp.Delivery, queue string, target *messaging.Delivery) {
	h := source.Headers
	*target = messaging.Delivery{
		DeliveryID:      source.DeliveryTag,
		SourceQueue:     queue,
		Topic:           source.Exchange,
		RoutingKey:      source.RoutingKey,
		Redelivered:     source.Redelivered,
		ReplyTo:         source.ReplyTo,
		ContentType:     source.ContentType,
		ContentEncoding: source.ContentEncoding,
		Timestamp:       source.Timestamp,
		Durable:         source.DeliveryMode == deliveryModePersistent,
		Expiration:      parseExpiration(source.Expiration),
		Payload:         source.Body,
		Upstream:        source,
	}

	target.MessageID = firstString(textHeader(h, headerID), source.MessageId)
	if target.MessageID == "" {
		target.MessageID = messaging.NewID()
	}
	target.MessageType = firstString(textHeader(h, headerType), source.Type, source.RoutingKey)
	target.CorrelationID = firstString(textHeader(h, headerCorrelation), source.CorrelationId, target.MessageID)
	target.CausationID = textHeader(h, headerCausation)
	target.Version = positiveOrOne(intHeader(h, headerVersion))
	target.Attempt = positiveOrOne(intHeader(h, headerAttempt))
	if ms, ok := integer(h[headerFirstSeen]); ok {
		target.FirstSeen = time.UnixMilli(ms).UTC()
	}
	target.Origin = textHeader(h, headerOrigin)
	target.Error = textHeader(h, headerError)
	target.Claim = textHeader(h, headerClaim)
	if route := textHeader(h, headerRoute); route != "" {
		target.Route = strings.Split(route, ",")
		target.RoutePosition = int(max(intHeader(h, headerRoutePosition), 0))
		target.RouteID = textHeader(h, headerRouteID)
	}

	for name, value := range h {
		if wire.IsReserved(name) {
			continue
		}
		if target.Headers == nil {
			target.Headers = make(map[string]any, len(h))
		}
		target.Headers[name] = value
	}
}

func firstString(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

func positiveOrOne(value int64) int {
	if value < 1 {
		return 1
	}
	return int(min(value, math.MaxInt32))
}

func textHeader(h amqp.Table, name string) string {
	switch v := h[name].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	default:
		return ""
	}
}

func intHeader(h amqp.Table, name string) int64 {
	v, _ := integer(h[name])
	return v
}

// integer reads an integer sent in any width, as a string, or as a float.
func integer(value any) (int64, bool) {
	switch v := value.(type) {
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case int:
		return int64(v), true
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint64:
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	case uint:
		if uint64(v) > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	case float32:
		return fromFloat(float64(v))
	case float64:
		return fromFloat(v)
	case string:
		return fromText(v)
	case []byte:
		return fromText(string(v))
	default:
		return 0, false
	}
}

func fromFloat(v float64) (int64, bool) {
	if math.IsNaN(v) || v >= math.MaxInt64 || v <= math.MinInt64 {
		return 0, false
	}
	return int64(v), true
}

func fromText(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return fromFloat(f)
	}
	return 0, false
}

func parseExpiration(value string) time.Duration {
	ms, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil || ms <= 0 {
		return 0
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}
