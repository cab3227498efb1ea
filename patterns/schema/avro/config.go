package avro

import (
	"reflect"
	"time"

	"github.com/warrenmq/messaging/internal/options"
)

// Defaults of the options.
const (
	// DefaultTimeout bounds each call to the schema registry.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxValueBytes is the longest string or bytes value, and the
	// most items of an array or map, that one decode allocates.
	DefaultMaxValueBytes = 1 << 20
)

// Options is the entry point for configuring NewRegistered and NewPlain:
// avro.Options.Write(reflect.TypeFor[OrderPlaced](), "order.placed", schema).
var Options OptionSet

// OptionSet holds the options of NewRegistered and NewPlain; each method
// returns an Option. It is exported so that go doc lists them.
type OptionSet struct{}

// Option configures NewRegistered or NewPlain.
type Option func(*config)

type config struct {
	writes        []writeOption
	reads         map[reflect.Type]string
	timeout       time.Duration
	maxValueBytes int
	register      bool
}

// writeOption is one Options.Write, checked by NewRegistered.
type writeOption struct {
	goType              reflect.Type
	subject, definition string
}

func newConfig(opts []Option) config {
	c := config{reads: map[reflect.Type]string{}, register: true}
	options.Apply(&c, opts)
	options.Positive(&c.timeout, DefaultTimeout)
	options.Positive(&c.maxValueBytes, DefaultMaxValueBytes)
	return c
}

// Write says, for NewRegistered, that messages of Go type t (a value or a
// pointer of it) are written with the Avro schema definition, registered in
// the registry under subject (the first time one is written, or at
// Codec.Register). Give one per message type the service publishes. Default:
// none; NewPlain refuses it (its one schema is its argument).
func (OptionSet) Write(t reflect.Type, subject, definition string) Option {
	return func(c *config) {
		c.writes = append(c.writes, writeOption{goType: t, subject: subject, definition: definition})
	}
}

// Read gives the reader schema for decoding into Go type t: a message is
// then resolved from the schema it was written with onto definition, so a
// field the writer did not have is filled with definition's default and a
// field definition does not declare is skipped. Without it (the default), a
// message is read with the writer's schema as written: its fields fill the
// struct fields of the same names (`avro:"name"` tags), and the others are
// left at their zero values.
func (OptionSet) Read(t reflect.Type, definition string) Option {
	return func(c *config) { c.reads[base(t)] = definition }
}

// Timeout bounds each call to the schema registry: registering or looking
// up a writer's schema, and fetching a schema by id on read, which happen
// once per schema and codec (the answers are cached). Default:
// DefaultTimeout (10s); zero or negative keeps it.
func (OptionSet) Timeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// MaxValueBytes bounds what one decode allocates: the longest string or
// bytes value, and the most items of one array or map block. A payload that
// claims more is refused before anything that size is allocated, so a few
// hostile bytes cannot make the consumer allocate gigabytes. Default:
// DefaultMaxValueBytes (1 MiB); zero or negative keeps it.
func (OptionSet) MaxValueBytes(n int) Option { return func(c *config) { c.maxValueBytes = n } }

// RegisterSchemas says whether the writer registers its schemas (true, the
// default) or only looks them up by fingerprint, for a registry whose
// schemas a release pipeline registers: a schema that is not there then
// fails the write, saying so.
func (OptionSet) RegisterSchemas(on bool) Option { return func(c *config) { c.register = on } }
