package avro

import (
	"errors"
	"fmt"
	"reflect"

	hamba "github.com/hamba/avro/v2"
)

// NewPlain returns a codec of plain Avro (avro/binary): every message is
// written with definition and read as written with it, with no framing and
// no registry, for queues whose two sides agree on one schema. Options.Read
// resolves onto a reader schema per Go type; Options.Write is refused (the
// schema is definition). The error says what is wrong with a schema, or
// that a reader schema cannot read what definition writes.
func NewPlain(definition string, options ...Option) (*Codec, error) {
	c := newConfig(options)
	if len(c.writes) > 0 {
		return nil, errors.New("avro: a plain codec writes every message with its one schema, so Options.Write does not apply; use NewRegistered to write a schema per type")
	}
	codec, err := newCodec(c, false)
	if err != nil {
		return nil, err
	}
	if codec.plain, err = parse(definition); err != nil {
		return nil, fmt.Errorf("avro: the plain codec's schema: %w", err)
	}
	codec.plainResolved = make(map[reflect.Type]hamba.Schema, len(codec.reads))
	var problems []error
	for goType, reader := range codec.reads {
		resolved, err := hamba.NewSchemaCompatibility().Resolve(reader, codec.plain)
		if err != nil {
			problems = append(problems, fmt.Errorf("avro: the reader schema of %s cannot read what the plain schema writes (%w); give every field the plain schema lacks a default", goType, err))
			continue
		}
		codec.plainResolved[goType] = resolved
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	return codec, nil
}
