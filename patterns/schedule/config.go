package schedule

import (
	"encoding/json"
	"log/slog"
)

// Options configures New. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

// Prefetch is how many messages the control consumer holds unacknowledged.
const Prefetch = 50

type config struct {
	monitor     Monitor
	logger      *slog.Logger
	encode      func(message any) ([]byte, error)
	contentType string
}

func newConfig(options []option) config {
	c := config{}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.encode == nil {
		c.encode = json.Marshal
		c.contentType = DefaultContentType
	}
	return c
}

// Monitor receives the scheduler's events (default NopMonitor).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}

// Logger is where the control consumer logs (default slog.Default()).
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *config) { c.logger = logger }
}

// Encoder encodes a Dispatch's Message when it has no Payload, and names the
// content type it writes (default encoding/json, application/json). The
// payload is encoded once, by At; the scheduler moves bytes after that.
func (singleton) Encoder(encode func(message any) ([]byte, error), contentType string) option {
	return func(c *config) {
		if encode != nil {
			c.encode, c.contentType = encode, contentType
		}
	}
}
