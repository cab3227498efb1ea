package schema

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Schema is one registered version of a subject's definition.
type Schema struct {
	// ID is unique across every subject of the registry; a message can carry
	// it instead of the definition.
	ID int64
	// Subject names what the schema describes, e.g. "order.placed".
	Subject string
	// Version counts the subject's distinct definitions, from 1.
	Version int
	// Format names the definition's language, e.g. "avro" or "json-schema".
	Format string
	// Definition is the schema's text, byte for byte as registered.
	Definition string
	// Fingerprint is the SHA-256 of Definition's bytes, in lower-case hex.
	Fingerprint string
	// RegisteredAt is when this version was first registered, in UTC.
	RegisteredAt time.Time
}

// Registry keeps schemas per subject. Every implementation gives the same
// answers: registering a definition the subject already has returns its
// existing version, and a lookup that finds nothing fails with an error that
// matches ErrSchemaNotFound rather than returning a zero Schema.
type Registry interface {
	// Register adds definition to subject as its next version, or returns
	// the version that has the same fingerprint.
	Register(ctx context.Context, subject, format, definition string) (Schema, error)
	// ByID returns the schema with id.
	ByID(ctx context.Context, id int64) (Schema, error)
	// ByVersion returns subject's version.
	ByVersion(ctx context.Context, subject string, version int) (Schema, error)
	// ByFingerprint returns subject's version whose definition has
	// fingerprint (see Fingerprint).
	ByFingerprint(ctx context.Context, subject, fingerprint string) (Schema, error)
	// Latest returns subject's highest version.
	Latest(ctx context.Context, subject string) (Schema, error)
	// Versions returns every version of subject, oldest first.
	Versions(ctx context.Context, subject string) ([]Schema, error)
}

// Errors; test with errors.Is. The texts are the other AceMQ libraries'.
var (
	// ErrSchemaNotFound reports a lookup that found nothing. A consumer that
	// cannot find its schema has a real problem and must not carry on with an
	// empty definition.
	ErrSchemaNotFound = errors.New("acemq: no such schema")
	// ErrInvalidSchema reports a registration with an empty subject or
	// definition.
	ErrInvalidSchema = errors.New("acemq: a schema needs a subject and a definition")
)

// Limits of a registration, the SQL table's column sizes; the memory registry
// keeps them too, so a registration that works in tests works in production.
const (
	MaxSubject = 255
	MaxFormat  = 64
)

// Fingerprint is the SHA-256 of definition's exact bytes, in lower-case hex:
// whitespace differences count, so a reformatted definition is a new version.
func Fingerprint(definition string) string {
	sum := sha256.Sum256([]byte(definition))
	return hex.EncodeToString(sum[:])
}

// check refuses a registration no registry can keep.
func check(subject, format, definition string) error {
	switch {
	case subject == "" || definition == "":
		return ErrInvalidSchema
	case len(subject) > MaxSubject:
		return fmt.Errorf("schema: the subject is %d bytes and a registry keeps at most %d; shorten it", len(subject), MaxSubject)
	case len(format) > MaxFormat:
		return fmt.Errorf("schema: the format %q is %d bytes and a registry keeps at most %d; shorten it", format[:MaxFormat]+"...", len(format), MaxFormat)
	}
	return nil
}

func notFoundID(id int64) error {
	return fmt.Errorf("%w with id %d", ErrSchemaNotFound, id)
}

func notFoundSubject(subject string) error {
	return fmt.Errorf("%w for subject %q", ErrSchemaNotFound, subject)
}

func notFoundVersion(subject string, version int) error {
	return fmt.Errorf("%w for subject %q at version %d", ErrSchemaNotFound, subject, version)
}

func notFoundFingerprint(subject, fingerprint string) error {
	return fmt.Errorf("%w for subject %q with fingerprint %s", ErrSchemaNotFound, subject, fingerprint)
}
