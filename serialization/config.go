package serialization

import (
	"log/slog"
	"reflect"
	"strings"

	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring New:
// serialization.Options.ReadTypes(types).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option. It is
// exported so that go doc lists them.
type OptionSet struct{}

// Option configures New.
type Option func(*config)

type config struct {
	readTypes     map[string]reflect.Type
	writeTypes    map[reflect.Type]string
	serializer    Serializer
	deserializers map[string]Deserializer
	allowed       map[string]struct{}

	ignoreUnknownMessageTypes   bool
	ignoreUnknownContentTypes   bool
	ignoreDeserializationErrors bool
	keepAddress                 bool

	logger  *slog.Logger
	monitor Monitor
	// decodedAs is monitor when it hears content types, or nil.
	decodedAs ContentTypeMonitor
}

func newConfig(opts []Option) config {
	c := config{
		readTypes:     map[string]reflect.Type{},
		writeTypes:    map[reflect.Type]string{},
		deserializers: map[string]Deserializer{JSONContentType: JSON{}, "": JSON{}},
	}
	options.Apply(&c, opts)
	options.Default[Serializer](&c.serializer, JSON{})
	options.Default(&c.logger, slog.Default())
	options.Default[Monitor](&c.monitor, NopMonitor{})
	c.decodedAs, _ = c.monitor.(ContentTypeMonitor)
	return c
}

// ReadTypes maps wire type names (Delivery.MessageType) to the Go types they
// decode into. A struct type decodes to a value, a pointer type to a pointer.
// Repeated calls add to the map; the map is copied. Default: none, so every
// delivery is undecodable (an unknown message type) until its type is added.
func (OptionSet) ReadTypes(types map[string]reflect.Type) Option {
	return func(c *config) {
		for name, t := range types {
			if t != nil {
				c.readTypes[name] = t
			}
		}
	}
}

// TopicFromType says whether an empty Dispatch.Topic becomes the message's
// type name (true, the default, as smarty/messaging v4 has it). With false the
// address is left as written: an empty Topic stays the default exchange, so a
// reply or a hop can go straight to a queue named by its RoutingKey.
func (OptionSet) TopicFromType(enabled bool) Option {
	return func(c *config) { c.keepAddress = !enabled }
}

// WriteTypes maps Go types to the wire type names written to
// Dispatch.MessageType (and to Topic when it is empty). A message may be a value
// or a pointer of a registered type. Repeated calls add to the map; the map is
// copied. Default: none, so writing a Message fails (ErrUnknownWriteType) until
// its type is added; a dispatch with a Payload and no Message passes unchanged.
func (OptionSet) WriteTypes(types map[reflect.Type]string) Option {
	return func(c *config) {
		for t, name := range types {
			if t != nil {
				c.writeTypes[t] = name
			}
		}
	}
}

// Serializer sets the encoder used on write (default JSON). Register a matching
// Deserializer with AddDeserializer for the read side.
func (OptionSet) Serializer(serializer Serializer) Option {
	return func(c *config) {
		if serializer != nil {
			c.serializer = serializer
		}
	}
}

// AddDeserializer registers deserializer for contentTypes. Content types are
// matched without parameters and case ("application/json; charset=utf-8" is
// "application/json"). A structured suffix alone ("+avro", "+json") serves
// every content type that ends in it and has no registration of its own:
// AddDeserializer(codec, "+avro") reads "application/vnd.orders+avro". With
// no contentTypes, a deserializer that is also a Serializer is registered for
// its own ContentType. Default: JSON for application/json and for a delivery
// without a content type.
func (OptionSet) AddDeserializer(deserializer Deserializer, contentTypes ...string) Option {
	return func(c *config) {
		if deserializer == nil {
			return
		}
		if len(contentTypes) == 0 {
			if s, ok := deserializer.(Serializer); ok {
				contentTypes = []string{s.ContentType()}
			}
		}
		for _, contentType := range contentTypes {
			c.deserializers[normalizeContentType(contentType)] = deserializer
		}
	}
}

// AllowedTypes restricts which wire type names this consumer accepts. Any other
// type is read with a nil Message and Delivery.Undecodable set to
// messaging.ErrFiltered, which the runtime acknowledges without handling or
// parking. A nil or empty map (the default) allows every type.
func (OptionSet) AllowedTypes(types map[string]struct{}) Option {
	return func(c *config) {
		if len(types) == 0 {
			c.allowed = nil
			return
		}
		c.allowed = make(map[string]struct{}, len(types))
		for name := range types {
			c.allowed[name] = struct{}{}
		}
	}
}

// IgnoreUnknownMessageTypes, when on, delivers a message whose type is not in
// ReadTypes with a nil Message (and a WARN log line) instead of marking it
// undecodable, which makes the runtime park it. Default off.
func (OptionSet) IgnoreUnknownMessageTypes(ignore bool) Option {
	return func(c *config) { c.ignoreUnknownMessageTypes = ignore }
}

// IgnoreUnknownContentTypes, when on, delivers a message whose content type has
// no deserializer with a nil Message (and a WARN log line) instead of marking it
// undecodable. Default off.
func (OptionSet) IgnoreUnknownContentTypes(ignore bool) Option {
	return func(c *config) { c.ignoreUnknownContentTypes = ignore }
}

// IgnoreDeserializationErrors, when on, delivers a message whose payload does not
// decode with a nil Message (and a WARN log line) instead of marking it
// undecodable. Default off.
func (OptionSet) IgnoreDeserializationErrors(ignore bool) Option {
	return func(c *config) { c.ignoreDeserializationErrors = ignore }
}

// Logger sets the logger for ignored decoding failures (default slog.Default()).
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// Monitor sets the encode and decode callbacks; one that is also a
// ContentTypeMonitor hears each decode with its content type. Default:
// NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// ContentTypeMonitor is a Monitor that also hears the content type of each
// delivery it is told of, to tell the codecs apart. The decorator looks for
// it on the Monitor it is given: one that has it hears every decode through
// MessageDecodedAs and not through MessageDecoded, so a decode is counted
// once; a Monitor without it keeps working as it is.
type ContentTypeMonitor interface {
	Monitor
	// MessageDecodedAs reports decoding one delivery whose content type is
	// contentType, as the delivery carries it (parameters and case too); err
	// is what MessageDecoded would be given.
	MessageDecodedAs(contentType string, err error)
}

// decoded reports one decode of a delivery of contentType to the monitor.
func (c *config) decoded(contentType string, err error) {
	if c.decodedAs != nil {
		c.decodedAs.MessageDecodedAs(contentType, err)
		return
	}
	c.monitor.MessageDecoded(err)
}

// deserializer is the one registered for contentType, else the one
// registered for its structured suffix ("+avro" for
// "application/vnd.orders+avro").
func (c *config) deserializer(contentType string) (Deserializer, bool) {
	normalized := normalizeContentType(contentType)
	if d, ok := c.deserializers[normalized]; ok {
		return d, true
	}
	if plus := strings.LastIndexByte(normalized, '+'); plus > strings.IndexByte(normalized, '/') {
		d, ok := c.deserializers[normalized[plus:]]
		return d, ok
	}
	return nil, false
}

// normalizeContentType drops parameters, surrounding space and case.
func normalizeContentType(contentType string) string {
	if i := strings.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	return strings.ToLower(strings.TrimSpace(contentType))
}
