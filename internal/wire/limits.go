package wire

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

const (
	// MaxShortString is the AMQP short-string limit in bytes: exchange names,
	// routing keys, header names and the message properties.
	MaxShortString = 255
	// DefaultMaxPayload is RabbitMQ's default max_message_size (128 MiB).
	DefaultMaxPayload = 128 << 20
	// MaxHeaderBlock bounds the encoded properties and headers of one message.
	// The content header must fit in one frame (RabbitMQ's default frame_max is
	// 128 KiB; a larger one closes the connection with FRAME_ERROR); this
	// leaves room for the properties and the envelope the transport adds.
	MaxHeaderBlock = 96 << 10
	// MaxHeaderDepth bounds nested tables and arrays in header values.
	MaxHeaderDepth = 32
	// ReservedPrefix is the envelope's header namespace.
	ReservedPrefix = "x-acemq-"
	// envelopeAllowance is what the transport's own envelope headers may add.
	envelopeAllowance = 2 << 10
)

// IsReserved reports whether a header name is in the envelope's namespace
// (compared without regard to case).
func IsReserved(name string) bool {
	return len(name) >= len(ReservedPrefix) && strings.EqualFold(name[:len(ReservedPrefix)], ReservedPrefix)
}

// ReservedHeaderError is the error every writer returns for an application
// header in the reserved namespace; its text is the wire contract's. It matches
// messaging.ErrWireLimit: like an over-long field, it is the message's own
// fault, refused alone before anything is sent, and no retry can fix it.
func ReservedHeaderError(name string) error {
	return reservedHeaderError{name: name}
}

type reservedHeaderError struct{ name string }

func (e reservedHeaderError) Error() string {
	return fmt.Sprintf("acemq: header %q is in the reserved %q namespace and would be dropped on consume; use a namespace of your own, such as x-yourcompany-", e.name, ReservedPrefix)
}

// Is matches messaging.ErrWireLimit.
func (e reservedHeaderError) Is(target error) bool { return target == messaging.ErrWireLimit }

// Check returns a *messaging.FieldError (matching messaging.ErrWireLimit) for
// the first field of d that cannot travel on AMQP, the reserved-header error
// for an application header named x-acemq-..., or nil. maxPayload <= 0 means
// DefaultMaxPayload.
func Check(d messaging.Dispatch, maxPayload int) error {
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	refuse := func(field string, size, limit int) error {
		return &messaging.FieldError{MessageID: Shorten(d.MessageID), Field: field, Size: size, Limit: limit}
	}
	short := []struct {
		name, value string
		verbatim    bool // may travel in its header alone on a Verbatim copy
	}{
		{"Topic (exchange)", d.Topic, false},
		{"RoutingKey", d.RoutingKey, false},
		{"MessageID", d.MessageID, true},
		{"CorrelationID", d.CorrelationID, true},
		{"MessageType", d.MessageType, true},
		{"ReplyTo", d.ReplyTo, false},
		{"ContentType", d.ContentType, false},
		{"ContentEncoding", d.ContentEncoding, false},
	}
	for _, f := range short {
		if len(f.value) > MaxShortString && !(f.verbatim && d.Verbatim) {
			return refuse(f.name, len(f.value), MaxShortString)
		}
	}
	if d.Expiration > 0 && d.Expiration/time.Millisecond > time.Duration(1<<32-1) {
		return &messaging.FieldError{MessageID: Shorten(d.MessageID), Field: "Expiration",
			Problem: fmt.Sprintf("of %s exceeds the broker's largest per-message TTL (%d ms)", d.Expiration, uint32(1<<32-1))}
	}
	if len(d.Payload) > maxPayload {
		return refuse("Payload", len(d.Payload), maxPayload)
	}
	size := envelopeAllowance
	for _, s := range []string{d.MessageID, d.CorrelationID, d.MessageType, d.CausationID, d.Origin, d.Error, d.Claim, d.RouteID} {
		size += 2*len(s) + 32
	}
	for _, step := range d.Route {
		size += len(step) + 1
	}
	for name, value := range d.Headers {
		if IsReserved(name) {
			return ReservedHeaderError(name)
		}
		if len(name) > MaxShortString {
			return refuse(fmt.Sprintf("header name %q", Shorten(name)), len(name), MaxShortString)
		}
		n, err := valueSize(value, 0)
		if err != nil {
			return &messaging.FieldError{MessageID: Shorten(d.MessageID), Field: fmt.Sprintf("header %q", Shorten(name)), Problem: err.Error()}
		}
		size += 1 + len(name) + n
	}
	if size > MaxHeaderBlock {
		return refuse("the headers and envelope together", size, MaxHeaderBlock)
	}
	return nil
}

// valueSize returns an upper bound of a header value's encoded size, or why an
// AMQP table cannot carry it.
func valueSize(value any, depth int) (int, error) {
	if depth > MaxHeaderDepth {
		return 0, fmt.Errorf("is nested deeper than %d levels", MaxHeaderDepth)
	}
	switch v := value.(type) {
	case nil, bool, byte, int8:
		return 2, nil
	case int16, uint16:
		return 3, nil
	case int32, uint32, float32:
		return 5, nil
	case int, int64, float64, time.Time:
		return 9, nil
	case amqp.Decimal:
		return 6, nil
	case string:
		return 5 + len(v), nil
	case []byte:
		return 5 + len(v), nil
	case []any:
		total := 5
		for _, item := range v {
			n, err := valueSize(item, depth+1)
			if err != nil {
				return 0, err
			}
			total += n
		}
		return total, nil
	case amqp.Table:
		return tableSize(v, depth)
	case map[string]any:
		return tableSize(v, depth)
	default:
		return 0, fmt.Errorf("has a value of type %T, which an AMQP table cannot carry; use strings, numbers, booleans, times, []byte, []any or nested tables", value)
	}
}

func tableSize(table map[string]any, depth int) (int, error) {
	total := 5
	for name, item := range table {
		if len(name) > MaxShortString {
			return 0, fmt.Errorf("has a nested field name of %d bytes; AMQP carries at most %d", len(name), MaxShortString)
		}
		n, err := valueSize(item, depth+1)
		if err != nil {
			return 0, err
		}
		total += 1 + len(name) + n
	}
	return total, nil
}

// Shorten returns s cut to at most 64 bytes on a rune boundary, with an
// ellipsis when cut: for naming an over-long value in an error or a log line.
func Shorten(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	return Cut(s, limit) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Cut returns s cut to at most limit bytes on a rune boundary, so that a
// valid UTF-8 string stays valid: for a value that must fit a short string or
// a bound on what is shown.
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	end := limit
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end]
}

// FitsProperty reports whether value can travel in an AMQP short-string
// property. An encoder leaves a Verbatim copy's over-long value out of the
// property and keeps it in its header.
func FitsProperty(value string) bool { return len(value) <= MaxShortString }
