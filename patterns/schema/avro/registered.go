package avro

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync/atomic"

	hamba "github.com/hamba/avro/v2"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/schema"
)

// Format is the registry format of an Avro schema.
const Format = "avro"

// frameSize is the registered framing: 0x00 and a 4-byte schema id.
const frameSize = 5

// Errors; test with errors.Is.
var (
	// ErrNotFramed: a payload read by a registered codec does not start with
	// 0x00 and a schema id. It comes marked messaging.Fatal.
	ErrNotFramed = errors.New("avro: the payload is not framed with a schema id")
	// ErrUnknownWriteType: Serialize was given a Go type without
	// Options.Write.
	ErrUnknownWriteType = errors.New("avro: no schema is given for the message's Go type")
)

// writeSchema is the schema messages of one Go type are written with, and
// its registry id once known.
type writeSchema struct {
	subject, definition string
	parsed              hamba.Schema
	id                  atomic.Int64 // 0 until registered or looked up
}

// NewRegistered returns a codec of registered Avro
// (application/vnd.acemq.avro) over registry: it writes each Go type given
// with Options.Write with its schema, registered in the registry, and reads a
// message with the schema whose id it carries, fetched from the registry
// once and cached. The error says which schema does not parse, or a Go type
// given twice.
func NewRegistered(registry schema.Registry, options ...Option) (*Codec, error) {
	if registry == nil {
		return nil, errors.New("avro: NewRegistered needs a schema registry; use schema.NewSQLRegistry (schema.NewMemoryRegistry in tests)")
	}
	c := newConfig(options)
	codec, err := newCodec(c, true)
	problems := []error{err}
	codec.registry, codec.timeout, codec.register = registry, c.timeout, c.register
	codec.writes = make(map[reflect.Type]*writeSchema, len(c.writes))
	codec.fetched, codec.resolved = map[int64]hamba.Schema{}, map[resolution]hamba.Schema{}
	for _, w := range c.writes {
		goType := base(w.goType)
		if _, taken := codec.writes[goType]; taken || goType == nil {
			problems = append(problems, fmt.Errorf("avro: Options.Write gives %v twice, or no type; give each Go type one schema", w.goType))
			continue
		}
		if w.subject == "" {
			problems = append(problems, fmt.Errorf("avro: Options.Write for %s has no subject; name one, e.g. the message type %q", goType, "order.placed"))
			continue
		}
		parsed, err := parse(w.definition)
		if err != nil {
			problems = append(problems, fmt.Errorf("avro: the schema of %s (subject %q): %w", goType, w.subject, err))
			continue
		}
		codec.writes[goType] = &writeSchema{subject: w.subject, definition: w.definition, parsed: parsed}
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	return codec, nil
}

// Register registers (or, with Options.RegisterSchemas(false), looks up)
// every schema given with Options.Write now, so a service learns at start-up
// that its registry is unreachable or lacks a schema rather than at its first
// write. Without it, each schema is registered the first time a message of
// its type is written. A schema registered before answers with its id and
// adds no version. The error joins every schema's failure.
func (c *Codec) Register(ctx context.Context) error {
	var problems []error
	for _, w := range c.writes {
		if _, err := c.idOf(ctx, w); err != nil {
			problems = append(problems, err)
		}
	}
	return errors.Join(problems...)
}

// serializeRegistered writes 0x00, the id of message's schema and the
// message's Avro encoding.
func (c *Codec) serializeRegistered(message any) ([]byte, error) {
	goType := base(reflect.TypeOf(message))
	w, ok := c.writes[goType]
	if !ok {
		return nil, fmt.Errorf("%w: %v; give its schema with avro.Options.Write(reflect.TypeFor[%v](), subject, definition)", ErrUnknownWriteType, goType, goType)
	}
	id := w.id.Load()
	if id == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		var err error
		if id, err = c.idOf(ctx, w); err != nil {
			return nil, err
		}
	}
	var frame [frameSize]byte
	binary.BigEndian.PutUint32(frame[1:], uint32(id))
	payload, err := c.encode(frame[:], w.parsed, message)
	if err != nil {
		return nil, fmt.Errorf("avro: this %v cannot be written with the schema of subject %q: %w", goType, w.subject, err)
	}
	return payload, nil
}

// idOf returns w's registry id, registering or looking it up the first time.
func (c *Codec) idOf(ctx context.Context, w *writeSchema) (int64, error) {
	if id := w.id.Load(); id != 0 {
		return id, nil
	}
	var found schema.Schema
	var err error
	if c.register {
		found, err = c.registry.Register(ctx, w.subject, Format, w.definition)
	} else {
		found, err = c.registry.ByFingerprint(ctx, w.subject, schema.Fingerprint(w.definition))
	}
	switch {
	case errors.Is(err, schema.ErrSchemaNotFound):
		return 0, messaging.Fatal(fmt.Errorf("avro: the registry has no schema of subject %q with this definition, and this codec only looks schemas up (Options.RegisterSchemas(false)); register it first: %w", w.subject, err))
	case err != nil:
		return 0, messaging.Retryable(fmt.Errorf("avro: could not register the schema of subject %q, so nothing was written; the registry did not answer, try again: %w", w.subject, err))
	case found.ID < 1 || found.ID > math.MaxInt32:
		return 0, messaging.Fatal(fmt.Errorf("avro: the registry gave the schema of subject %q the id %d, which the 4-byte framing cannot carry (1 to %d)", w.subject, found.ID, math.MaxInt32))
	}
	w.id.Store(found.ID)
	return found.ID, nil
}

// deserializeRegistered reads the framing and decodes the rest with the
// writer's schema, resolved onto target's reader schema if it has one.
func (c *Codec) deserializeRegistered(payload []byte, target any) error {
	if len(payload) < frameSize || payload[0] != 0x00 {
		return messaging.Fatal(notFramed(payload))
	}
	id := int64(binary.BigEndian.Uint32(payload[1:frameSize]))
	decoding, err := c.decodingSchema(id, targetType(target))
	if err != nil {
		return err
	}
	return c.decode(decoding, payload[frameSize:], target)
}

func notFramed(payload []byte) error {
	if len(payload) == 0 {
		return fmt.Errorf("%w: it is empty, where registered Avro starts with 0x00 and a 4-byte schema id; the publisher wrote %s without a schema", ErrNotFramed, RegisteredContentType)
	}
	if payload[0] != 0x00 {
		return fmt.Errorf("%w: it starts with 0x%02x, where registered Avro starts with 0x00 and a 4-byte schema id; if it is plain Avro, publish it as %s and read it with avro.NewPlain", ErrNotFramed, payload[0], PlainContentType)
	}
	return fmt.Errorf("%w: it is %d bytes, shorter than the 0x00 and 4-byte schema id registered Avro starts with; it was cut short", ErrNotFramed, len(payload))
}

// decodingSchema returns the schema to decode a message written with schema
// id into goType: the writer's, or it resolved onto goType's reader schema.
func (c *Codec) decodingSchema(id int64, goType reflect.Type) (hamba.Schema, error) {
	reader, resolves := c.reads[goType]
	key := resolution{id: id, goType: goType}
	c.mu.Lock()
	writer, fetched := c.fetched[id]
	resolved, done := c.resolved[key]
	c.mu.Unlock()
	if resolves && done {
		return resolved, nil
	}
	if !fetched {
		var err error
		if writer, err = c.fetch(id); err != nil {
			return nil, err
		}
	}
	if !resolves {
		return writer, nil
	}
	resolved, err := hamba.NewSchemaCompatibility().Resolve(reader, writer)
	if err != nil {
		return nil, messaging.Fatal(fmt.Errorf("avro: the message's schema (id %d) cannot be read as the reader schema of %s: %w; give every field the reader adds a default, or read with the writer's schema (no Options.Read)", id, goType, err))
	}
	c.mu.Lock()
	c.resolved[key] = resolved
	c.mu.Unlock()
	return resolved, nil
}

// fetch reads schema id from the registry and keeps it: a registered
// schema never changes.
func (c *Codec) fetch(id int64) (hamba.Schema, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	found, err := c.registry.ByID(ctx, id)
	switch {
	case errors.Is(err, schema.ErrSchemaNotFound):
		return nil, messaging.Fatal(fmt.Errorf("avro: the message names schema id %d, which the registry does not hold: it was written against another registry, or its schema was deleted; point this consumer at the publisher's registry: %w", id, err))
	case err != nil:
		return nil, messaging.Retryable(fmt.Errorf("avro: could not fetch schema id %d from the registry, which did not answer; the message will be read again: %w", id, err))
	case !strings.EqualFold(found.Format, Format):
		return nil, messaging.Fatal(fmt.Errorf("avro: the message names schema id %d, a %q schema of subject %q, not an Avro one; the publisher framed it wrongly", id, found.Format, found.Subject))
	}
	parsed, err := parse(found.Definition)
	if err != nil {
		return nil, messaging.Fatal(fmt.Errorf("avro: schema id %d (subject %q, version %d) in the registry: %w", id, found.Subject, found.Version, err))
	}
	c.mu.Lock()
	c.fetched[id] = parsed
	c.mu.Unlock()
	return parsed, nil
}
