package replay

import (
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring Run: replay.Options.Monitor(...).
var Options OptionSet

// OptionSet holds the options of Run; each method returns an Option. It is
// exported so that go doc lists them.
type OptionSet struct{}

// Option configures Run.
type Option func(*config)

type config struct {
	monitor Monitor
	each    func(messaging.Delivery, Verdict)
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default[Monitor](&c.monitor, NopMonitor{})
	if c.each == nil {
		c.each = func(messaging.Delivery, Verdict) {}
	}
	return c
}

// Monitor receives the pass's events. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// Each is called for every message the pass reads, with what became of it:
// Moved (or, in a dry run, would move), Declined by the filter. An operator's
// tool lists the messages with it. It runs on the pass's goroutine, so it
// should return quickly. Default: none (nil calls nothing).
func (OptionSet) Each(each func(delivery messaging.Delivery, verdict Verdict)) Option {
	return func(c *config) { c.each = each }
}
