package schedule

import (
	"encoding/json"
	"log/slog"

	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring New: schedule.Options.Monitor(...).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option. It is
// exported so that go doc lists them.
type OptionSet struct{}

// Option configures New.
type Option func(*config)

// Prefetch is how many messages the control consumer holds unacknowledged.
const Prefetch = 50

type config struct {
	monitor     Monitor
	logger      *slog.Logger
	encode      func(message any) ([]byte, error)
	contentType string
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default[Monitor](&c.monitor, NopMonitor{})
	options.Default(&c.logger, slog.Default())
	if c.encode == nil {
		c.encode = json.Marshal
		c.contentType = DefaultContentType
	}
	return c
}

// Monitor receives the scheduler's events. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// Logger is where the control consumer logs. Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// Encoder encodes a Dispatch's Message when it has no Payload, and names the
// content type it writes. Default: encoding/json, application/json; a nil
// encode keeps the default. The payload is encoded once, by At; the
// scheduler moves bytes after that.
func (OptionSet) Encoder(encode func(message any) ([]byte, error), contentType string) Option {
	return func(c *config) {
		if encode != nil {
			c.encode, c.contentType = encode, contentType
		}
	}
}
