package serialization

import (
	"log/slog"
	"reflect"
	"strings"
)

// Options is the entry point for configuring New:
// serialization.Options.ReadTypes(types).
var Options singleton

type singleton struct{}

type option func(*configuration)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

type configuration struct {
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
}

func newConfiguration(options []option) *configuration {
	c := &configuration{
		readTypes:     map[string]reflect.Type{},
		writeTypes:    map[reflect.Type]string{},
		deserializers: map[string]Deserializer{JSONContentType: JSON{}, "": JSON{}},
	}
	for _, o := range options {
		if o != nil {
			o(c)
		}
	}
	if c.serializer == nil {
		c.serializer = JSON{}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	return c
}

// ReadTypes maps wire type names (Delivery.MessageType) to the Go types they
// decode into. A struct type decodes to a value, a pointer type to a pointer.
// Repeated calls add to the map; the map is copied.
func (singleton) ReadTypes(types map[string]reflect.Type) option {
	return func(c *configuration) {
		for name, t := range types {
			if t != nil {
				c.readTypes[name] = t
			}
		}
	}
}

// TopicFromType says whether an empty Dispatch.Topic becomes the message's
// type name (true, the default, as the core seed has it). With false the
// address is left as written: an empty Topic stays the default exchange, so a
// reply or a hop can go straight to a queue named by its RoutingKey.
func (singleton) TopicFromType(enabled bool) option {
	return func(c *configuration) { c.keepAddress = !enabled }
}

// WriteTypes maps Go types to the wire type names written to
// Dispatch.MessageType (and to Topic when it is empty). A message may be a value
// or a pointer of a registered type. Repeated calls add to the map; the map is
// copied.
func (singleton) WriteTypes(types map[reflect.Type]string) option {
	return func(c *configuration) {
		for t, name := range types {
			if t != nil {
				c.writeTypes[t] = name
			}
		}
	}
}

// Serializer sets the encoder used on write (default JSON). Register a matching
// Deserializer with AddDeserializer for the read side.
func (singleton) Serializer(serializer Serializer) option {
	return func(c *configuration) {
		if serializer != nil {
			c.serializer = serializer
		}
	}
}

// AddDeserializer registers deserializer for contentTypes. Content types are
// matched without parameters and case ("application/json; charset=utf-8" is
// "application/json"). With no contentTypes, a deserializer that is also a
// Serializer is registered for its own ContentType.
func (singleton) AddDeserializer(deserializer Deserializer, contentTypes ...string) option {
	return func(c *configuration) {
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
func (singleton) AllowedTypes(types map[string]struct{}) option {
	return func(c *configuration) {
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
func (singleton) IgnoreUnknownMessageTypes(ignore bool) option {
	return func(c *configuration) { c.ignoreUnknownMessageTypes = ignore }
}

// IgnoreUnknownContentTypes, when on, delivers a message whose content type has
// no deserializer with a nil Message (and a WARN log line) instead of marking it
// undecodable. Default off.
func (singleton) IgnoreUnknownContentTypes(ignore bool) option {
	return func(c *configuration) { c.ignoreUnknownContentTypes = ignore }
}

// IgnoreDeserializationErrors, when on, delivers a message whose payload does not
// decode with a nil Message (and a WARN log line) instead of marking it
// undecodable. Default off.
func (singleton) IgnoreDeserializationErrors(ignore bool) option {
	return func(c *configuration) { c.ignoreDeserializationErrors = ignore }
}

// Logger sets the logger for ignored decoding failures (default slog.Default()).
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *configuration) { c.logger = logger }
}

// Monitor sets the encode and decode callbacks (default NopMonitor).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *configuration) { c.monitor = monitor }
}

// normalizeContentType drops parameters, surrounding space and case.
func normalizeContentType(contentType string) string {
	if i := strings.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	return strings.ToLower(strings.TrimSpace(contentType))
}
