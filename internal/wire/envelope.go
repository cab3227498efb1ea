package wire

import (
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

// The envelope headers of the AceMQ wire contract. Every header under
// ReservedPrefix is removed from Delivery.Headers on consume.
const (
	HeaderID            = ReservedPrefix + "id"
	HeaderType          = ReservedPrefix + "type"
	HeaderVersion       = ReservedPrefix + "version"
	HeaderCorrelation   = ReservedPrefix + "correlation"
	HeaderCausation     = ReservedPrefix + "causation"
	HeaderAttempt       = ReservedPrefix + "attempt"
	HeaderFirstSeen     = ReservedPrefix + "first-seen"
	HeaderOrigin        = ReservedPrefix + "origin"
	HeaderError         = ReservedPrefix + "error"
	HeaderClaim         = ReservedPrefix + "claim"
	HeaderRoute         = ReservedPrefix + "route"
	HeaderRoutePosition = ReservedPrefix + "route-position"
	HeaderRouteID       = ReservedPrefix + "route-id"
)

// Names of the settlement topology of the wire contract: a queue's rejected
// messages go to {queue}.dlq through DeadLetterExchange, its parked ones to
// {queue}.parked.
const (
	DeadLetterExchange = "acemq.dlx"
	DeadLetterSuffix   = ".dlq"
	ParkedSuffix       = ".parked"
)

// DeadLetterQueue is the dead-letter queue of queue: {queue}.dlq.
func DeadLetterQueue(queue string) string { return queue + DeadLetterSuffix }

// ParkedQueue is the parking queue of queue: {queue}.parked.
func ParkedQueue(queue string) string { return queue + ParkedSuffix }

// Properties are the message properties an envelope travels with beside its
// headers, as Encode fills them and Decode reads them.
type Properties struct {
	// ID is the message id, whole (Encode: the dispatch's, else a new one).
	ID string
	// MessageID, CorrelationID and Type are the AMQP short-string properties:
	// each is empty when its value does not fit one (only a Verbatim copy can
	// carry a longer one, whole, in its header).
	MessageID     string
	CorrelationID string
	Type          string
	// ReplyTo, ContentType and ContentEncoding are the envelope's, as they are.
	ReplyTo         string
	ContentType     string
	ContentEncoding string
	// Timestamp is the dispatch's, else now.
	Timestamp time.Time
	// Expiration is the TTL in decimal milliseconds, rounded up; empty: none.
	Expiration string
	// Persistent is false for a Transient dispatch.
	Persistent bool
}

// HostOrigin is the origin a transport writes on a dispatch that names none
// when its Origin option is unset: acemq@{hostname}, or acemq@unknown when
// the host has no name.
func HostOrigin() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return "acemq@" + host
}

// Encode writes d's application headers and envelope headers into one map and
// returns it with the properties, filling the envelope defaults: a new id,
// correlation = id, type = routing key, version and attempt 1, first seen =
// now, origin = defaultOrigin, timestamp = now. Application header values are
// put in the map in the form amqp091 writes (TableValue); the envelope's are
// strings, int32 and int64 (first seen in Unix milliseconds). It does not check d: run Check first. A transport encoding
// many dispatches at once uses an Encoder, which writes the same maps.
func Encode(d messaging.Dispatch, now time.Time, defaultOrigin string) (map[string]any, Properties) {
	e := NewEncoder(now, defaultOrigin)
	return e.Encode(d)
}

// Encoder encodes the dispatches of one write, as Encode does each. The
// header values they share (the first seen of those that have none, which is
// the write's time, the default origin, and a message type equal to the one
// before) are boxed into an interface value once and put in every map that
// takes them, rather than once per message: header values are never changed
// in place, so sharing one is safe and saves an allocation per message each.
// The zero Encoder encodes at the zero time; an Encoder is not safe for
// concurrent use.
type Encoder struct {
	now           time.Time
	defaultOrigin string
	nowMillis     any // now in Unix milliseconds, boxed on first use
	origin        any // defaultOrigin, boxed on first use
	lastType      any // the message type boxed last
}

// NewEncoder returns an Encoder for dispatches written at now, whose origin is
// defaultOrigin when they have none.
func NewEncoder(now time.Time, defaultOrigin string) Encoder {
	return Encoder{now: now, defaultOrigin: defaultOrigin}
}

// Encode writes d as Encode(d, now, defaultOrigin) does.
func (e *Encoder) Encode(d messaging.Dispatch) (map[string]any, Properties) {
	env := d.Envelope()
	id := env.MessageID
	if id == "" {
		id = messaging.NewID()
	}
	correlation := firstString(env.CorrelationID, id)
	messageType := firstString(env.MessageType, d.RoutingKey)
	timestamp := env.Timestamp
	if timestamp.IsZero() {
		timestamp = e.now
	}

	headers := e.headers(d, env, messageType)
	boxedID := any(id) // boxed once: the correlation is usually the id
	headers[HeaderID] = boxedID
	if messageType != "" {
		headers[HeaderType] = e.boxType(messageType)
	}
	headers[HeaderVersion] = AtLeastOne(env.Version)
	if correlation == id {
		headers[HeaderCorrelation] = boxedID
	} else {
		headers[HeaderCorrelation] = correlation
	}
	putString(headers, HeaderCausation, env.CausationID)
	headers[HeaderAttempt] = AtLeastOne(env.Attempt)
	if env.FirstSeen.IsZero() {
		headers[HeaderFirstSeen] = e.boxNow()
	} else {
		headers[HeaderFirstSeen] = env.FirstSeen.UnixMilli()
	}
	if env.Origin != "" {
		headers[HeaderOrigin] = env.Origin
	} else if e.defaultOrigin != "" {
		headers[HeaderOrigin] = e.boxOrigin()
	}
	putString(headers, HeaderError, env.Error)
	putString(headers, HeaderClaim, env.Claim)
	if len(env.Route) > 0 {
		headers[HeaderRoute] = strings.Join(env.Route, ",")
		headers[HeaderRoutePosition] = ClampInt32(max(env.RoutePosition, 0))
		putString(headers, HeaderRouteID, env.RouteID)
	}

	return headers, Properties{
		ID:              id,
		MessageID:       propertyOf(id),
		CorrelationID:   propertyOf(correlation),
		Type:            propertyOf(env.MessageType),
		ReplyTo:         env.ReplyTo,
		ContentType:     env.ContentType,
		ContentEncoding: env.ContentEncoding,
		Timestamp:       timestamp,
		Expiration:      ExpirationMillis(env.Expiration),
		Persistent:      !d.Transient,
	}
}

// headers makes the map of d's headers: its application headers in the form
// amqp091 writes them, and room for the envelope's.
func (e *Encoder) headers(d messaging.Dispatch, env messaging.Envelope, messageType string) map[string]any {
	origin := firstString(env.Origin, e.defaultOrigin)
	// Sized exactly: a map of up to 8 entries is a single group, which one
	// sized for more than 8 is not (two allocations more per message).
	headers := make(map[string]any, len(d.Headers)+5+nonEmpty(messageType, env.CausationID, origin, env.Error, env.Claim)+routeHeaders(env))
	for name, value := range d.Headers {
		switch value.(type) {
		case int, []any, amqp.Table, map[string]any:
			value = TableValue(value)
		}
		headers[name] = value
	}
	return headers
}

// boxNow is the encoder's time in Unix milliseconds, as a header value.
func (e *Encoder) boxNow() any {
	if e.nowMillis == nil {
		e.nowMillis = e.now.UnixMilli()
	}
	return e.nowMillis
}

// boxOrigin is the default origin as a header value.
func (e *Encoder) boxOrigin() any {
	if e.origin == nil {
		e.origin = e.defaultOrigin
	}
	return e.origin
}

// boxType is messageType as a header value, the one boxed before when it is
// the same.
func (e *Encoder) boxType(messageType string) any {
	if last, ok := e.lastType.(string); !ok || last != messageType {
		e.lastType = messageType
	}
	return e.lastType
}

// nonEmpty counts the values that are not empty.
func nonEmpty(values ...string) int {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	return n
}

// routeHeaders is how many route headers env travels with.
func routeHeaders(env messaging.Envelope) int {
	if len(env.Route) == 0 {
		return 0
	}
	return 2 + nonEmpty(env.RouteID)
}

// Decode reads the envelope of target from headers and props (DecodeEnvelope,
// with target.RoutingKey, which the transport sets first) and sets
// target.Headers to the headers outside the reserved namespace (nil when
// there are none); the transport's own fields (delivery id, queue, exchange,
// payload, ...) are left to the caller.
func Decode(headers map[string]any, props Properties, target *messaging.Delivery) {
	target.SetEnvelope(DecodeEnvelope(headers, props, target.RoutingKey))
	target.Headers = nil
	for name, value := range headers {
		if IsReserved(name) {
			continue
		}
		if target.Headers == nil {
			target.Headers = make(map[string]any, len(headers))
		}
		target.Headers[name] = value
	}
}

// DecodeEnvelope reads an envelope from headers and props, tolerantly: each
// field comes from its header, else its property, else its default (a new
// id; type = routingKey; correlation = id; version and attempt 1).
func DecodeEnvelope(headers map[string]any, props Properties, routingKey string) messaging.Envelope {
	h := headers
	id := firstString(Text(h[HeaderID]), props.MessageID)
	if id == "" {
		id = messaging.NewID()
	}
	version, _ := Integer(h[HeaderVersion])
	attempt, _ := Integer(h[HeaderAttempt])
	env := messaging.Envelope{
		MessageID:       id,
		CorrelationID:   firstString(Text(h[HeaderCorrelation]), props.CorrelationID, id),
		CausationID:     Text(h[HeaderCausation]),
		ReplyTo:         props.ReplyTo,
		MessageType:     firstString(Text(h[HeaderType]), props.Type, routingKey),
		Version:         PositiveOrOne(version),
		ContentType:     props.ContentType,
		ContentEncoding: props.ContentEncoding,
		Attempt:         PositiveOrOne(attempt),
		Origin:          Text(h[HeaderOrigin]),
		Error:           Text(h[HeaderError]),
		Claim:           Text(h[HeaderClaim]),
		Expiration:      ParseExpiration(props.Expiration),
		Timestamp:       props.Timestamp,
	}
	if firstSeen, ok := Millis(h[HeaderFirstSeen]); ok {
		env.FirstSeen = firstSeen
	}
	if route := Text(h[HeaderRoute]); route != "" {
		env.Route = strings.Split(route, ",")
		position, _ := Integer(h[HeaderRoutePosition])
		env.RoutePosition = int(max(position, 0))
		env.RouteID = Text(h[HeaderRouteID])
	}
	return env
}

// propertyOf is value when it fits an AMQP short-string property, else empty.
func propertyOf(value string) string {
	if FitsProperty(value) {
		return value
	}
	return ""
}

func putString(headers map[string]any, name, value string) {
	if value != "" {
		headers[name] = value
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

// AtLeastOne is value, at least 1, clamped to an int32 (version and attempt).
func AtLeastOne(value int) int32 { return ClampInt32(max(value, 1)) }

// ClampInt32 is value clamped to the int32 range an AMQP table integer holds.
func ClampInt32(value int) int32 {
	return int32(min(max(value, math.MinInt32), math.MaxInt32))
}

// PositiveOrOne is a decoded version or attempt: value, or 1 when it is below
// 1, clamped to MaxInt32.
func PositiveOrOne(value int64) int {
	if value < 1 {
		return 1
	}
	return int(min(value, math.MaxInt32))
}

// Text reads a header value sent as a string or as bytes; anything else is "".
func Text(value any) string {
	switch v := value.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	default:
		return ""
	}
}

// Millis reads a time sent as Unix milliseconds (any form Integer reads), in UTC.
func Millis(value any) (time.Time, bool) {
	ms, ok := Integer(value)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

// Integer reads an integer sent in any width, as a string, or as a float
// (truncated); false when value is none of these or is out of the int64 range.
func Integer(value any) (int64, bool) {
	if n, ok := Whole(value); ok {
		return n, true
	}
	switch v := value.(type) {
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

// Whole reads an integer sent in any width, signed or not; false for any
// other type, and for an unsigned value beyond the int64 range. It is the
// strict reading beside Integer, for what RabbitMQ takes as an integer only
// (a queue argument such as x-message-ttl).
func Whole(value any) (int64, bool) {
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

// RoundExpiration rounds a TTL up to whole milliseconds, as it travels, so a
// short TTL never becomes 0; zero or negative means none (0).
func RoundExpiration(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return 0
	}
	if rest := ttl % time.Millisecond; rest != 0 {
		ttl += time.Millisecond - rest
	}
	return ttl
}

// ExpirationMillis renders a TTL as the decimal milliseconds AMQP expects,
// rounded up (RoundExpiration); empty for none.
func ExpirationMillis(ttl time.Duration) string {
	if ttl <= 0 {
		return ""
	}
	ms := ttl / time.Millisecond
	if ttl%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(int64(ms), 10)
}

// ParseExpiration reads an AMQP expiration: decimal milliseconds; anything
// else, zero or negative is none (0); too large is the longest duration.
func ParseExpiration(value string) time.Duration {
	if value == "" { // most deliveries: answered without the parse error's allocation
		return 0
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil || ms <= 0 {
		return 0
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}
