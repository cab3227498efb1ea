package avro

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sync"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/warrenmq/messaging/patterns/schema"
)

// Content types of the two modes and the one both accept.
const (
	// RegisteredContentType is what a registered codec writes: each payload
	// is 0x00, the writer's schema id in 4 bytes big-endian, then the Avro
	// binary encoding.
	RegisteredContentType = "application/vnd.acemq.avro"
	// PlainContentType is what a plain codec writes: the Avro binary
	// encoding alone, of the one schema both sides know.
	PlainContentType = "avro/binary"
	// GenericContentType is accepted by both modes, as is any type ending in
	// Suffix.
	GenericContentType = "application/avro"
	// Suffix is the structured suffix of an Avro content type
	// ("application/vnd.orders+avro"); registered alone with
	// serialization.Options.AddDeserializer, it serves every such type.
	Suffix = "+avro"
)

// Codec is a serialization.Serializer and Deserializer of Avro, in one of the
// AceMQ family's two modes: registered (NewRegistered) or plain (NewPlain).
// It is safe for concurrent use when its registry is.
type Codec struct {
	registered bool
	api        hamba.API
	readers    sync.Pool // *hamba.Reader over api
	writers    sync.Pool // *hamba.Writer over api
	reads      map[reflect.Type]hamba.Schema

	// plain mode: the one schema, and it resolved onto each reader schema.
	plain         hamba.Schema
	plainResolved map[reflect.Type]hamba.Schema

	// registered mode.
	registry schema.Registry
	timeout  time.Duration
	register bool
	writes   map[reflect.Type]*writeSchema
	mu       sync.Mutex
	fetched  map[int64]hamba.Schema // writers' schemas by id
	resolved map[resolution]hamba.Schema
}

// resolution names a writer's schema resolved onto the reader schema of a
// Go type.
type resolution struct {
	id     int64
	goType reflect.Type
}

// newCodec builds what both modes share from c.
func newCodec(c config, registered bool) (*Codec, error) {
	codec := &Codec{
		registered: registered,
		api:        hamba.Config{MaxByteSliceSize: c.maxValueBytes, MaxSliceAllocSize: c.maxValueBytes}.Freeze(),
		reads:      map[reflect.Type]hamba.Schema{},
	}
	codec.readers.New = func() any { return hamba.NewReader(nil, 0, hamba.WithReaderConfig(codec.api)) }
	codec.writers.New = func() any { return hamba.NewWriter(nil, 512, hamba.WithWriterConfig(codec.api)) }
	var problems []error
	for goType, definition := range c.reads {
		parsed, err := parse(definition)
		if err != nil {
			problems = append(problems, fmt.Errorf("avro: the reader schema of %s: %w", goType, err))
			continue
		}
		codec.reads[goType] = parsed
	}
	return codec, errors.Join(problems...)
}

// parse parses an Avro schema on its own: a named type of one definition
// never stands for a namesake of another.
func parse(definition string) (hamba.Schema, error) {
	parsed, err := hamba.ParseWithCache(definition, "", &hamba.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("it is not an Avro schema: %w", err)
	}
	return parsed, nil
}

// ContentType returns RegisteredContentType or PlainContentType.
func (c *Codec) ContentType() string {
	if c.registered {
		return RegisteredContentType
	}
	return PlainContentType
}

// Serialize encodes message: framed with its schema's id in registered mode,
// alone in plain mode.
func (c *Codec) Serialize(message any) ([]byte, error) {
	if c.registered {
		return c.serializeRegistered(message)
	}
	payload, err := c.encode(nil, c.plain, message)
	if err != nil {
		return nil, fmt.Errorf("avro: this %T cannot be written with the plain codec's schema: %w", message, err)
	}
	return payload, nil
}

// Deserialize decodes payload into target, a pointer, with the schema the
// payload was written with, resolved onto target's reader schema when
// Options.Read gave one. The whole payload must be one value: bytes left
// over mean it was written with another schema or in the other mode.
func (c *Codec) Deserialize(payload []byte, target any) error {
	if c.registered {
		return c.deserializeRegistered(payload, target)
	}
	decoding := c.plain
	if resolved, ok := c.plainResolved[targetType(target)]; ok {
		decoding = resolved
	}
	return c.decode(decoding, payload, target)
}

// encode returns frame followed by message's encoding with s.
func (c *Codec) encode(frame []byte, s hamba.Schema, message any) ([]byte, error) {
	writer := c.writers.Get().(*hamba.Writer)
	defer c.writers.Put(writer)
	writer.Reset(nil)
	writer.Error = nil
	_, _ = writer.Write(frame) // appends to the buffer: it cannot fail
	writer.WriteVal(s, message)
	if writer.Error != nil {
		return nil, writer.Error
	}
	return slices.Clone(writer.Buffer()), nil
}

// decode reads exactly one value of s from payload into target.
func (c *Codec) decode(s hamba.Schema, payload []byte, target any) error {
	if target == nil || reflect.TypeOf(target).Kind() != reflect.Pointer || reflect.ValueOf(target).IsNil() {
		return fmt.Errorf("avro: cannot decode into %T; register a struct type (or map[string]any) in ReadTypes", target)
	}
	reader := c.readers.Get().(*hamba.Reader)
	defer func() {
		reader.Reset(nil) // keep no payload alive in the pool
		c.readers.Put(reader)
	}()
	reader.Reset(payload)
	reader.Error = nil
	reader.ReadVal(s, target)
	if reader.Error != nil && !errors.Is(reader.Error, io.EOF) {
		return fmt.Errorf("avro: this message is not Avro of the %s schema that reads as %s: %w", describe(s), targetType(target), reader.Error)
	}
	if reader.Peek(); reader.Error == nil {
		return fmt.Errorf("avro: this message is longer than one %s value (bytes are left after it): it was written with another schema, or framed by the other Avro mode (%s carries a schema id, %s does not)", describe(s), RegisteredContentType, PlainContentType)
	}
	return nil
}

// describe names a schema in an error: its full name, or its type.
func describe(s hamba.Schema) string {
	if named, ok := s.(hamba.NamedSchema); ok {
		return named.FullName()
	}
	return string(s.Type())
}

// targetType is the Go type a decode fills: target's type without pointers.
func targetType(target any) reflect.Type {
	return base(reflect.TypeOf(target))
}

// base strips every pointer from t.
func base(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
