package otel

import (
	"maps"

	"github.com/warrenmq/messaging/internal/wire"
)

// headers adapts a message's application headers to the propagator's carrier.
// A header that is not text (a number, a table) reads as absent, so a
// malformed trace context never gets further than the propagator's parser.
type headers map[string]any

// Get returns the header's value when it is a string or bytes.
func (h headers) Get(key string) string { return wire.Text(h[key]) }

// Set writes the header as a string.
func (h headers) Set(key, value string) { h[key] = value }

// Keys lists the header names.
func (h headers) Keys() []string {
	keys := make([]string, 0, len(h))
	for key := range h {
		keys = append(keys, key)
	}
	return keys
}

// withFields returns a copy of source with room for the propagator's fields,
// so a caller's map (which it may share between dispatches) is never changed.
func withFields(source map[string]any, fields int) headers {
	copied := make(headers, len(source)+fields)
	maps.Copy(copied, source)
	return copied
}
