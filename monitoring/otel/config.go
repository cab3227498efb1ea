package otel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring New:
// otel.Options.TracerProvider(provider).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option. It is
// exported so that go doc lists them.
type OptionSet struct{}

// Option configures New.
type Option func(*config)

type config struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default[trace.TracerProvider](&c.provider, otel.GetTracerProvider())
	options.Default[propagation.TextMapPropagator](&c.propagator, propagation.TraceContext{})
	return c
}

// TracerProvider is where spans are started. Default: the global one
// (otel.GetTracerProvider), which discards spans until the application sets
// one with an SDK.
func (OptionSet) TracerProvider(provider trace.TracerProvider) Option {
	return func(c *config) { c.provider = provider }
}

// Propagator writes the trace context into a dispatch's headers and reads it
// from a delivery's. Default: W3C trace context (traceparent and tracestate),
// which AceMQ's other libraries read and write; the global propagator is not
// the default because it propagates nothing until an application sets one.
func (OptionSet) Propagator(propagator propagation.TextMapPropagator) Option {
	return func(c *config) { c.propagator = propagator }
}
