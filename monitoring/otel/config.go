package otel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Options configures New. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

type config struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
}

func newConfig(options []option) config {
	c := config{}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.provider == nil {
		c.provider = otel.GetTracerProvider()
	}
	if c.propagator == nil {
		c.propagator = propagation.TraceContext{}
	}
	return c
}

// TracerProvider is where spans are started; the default is the global one
// (otel.GetTracerProvider), which discards spans until the application sets
// one with an SDK.
func (singleton) TracerProvider(provider trace.TracerProvider) option {
	return func(c *config) { c.provider = provider }
}

// Propagator writes the trace context into a dispatch's headers and reads it
// from a delivery's. The default is W3C trace context (traceparent and
// tracestate), which AceMQ's other libraries read and write; the global
// propagator is not the default because it propagates nothing until an
// application sets one.
func (singleton) Propagator(propagator propagation.TextMapPropagator) option {
	return func(c *config) { c.propagator = propagator }
}
