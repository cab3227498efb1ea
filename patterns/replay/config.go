package replay

import (
	"time"

	"github.com/warrenmq/messaging"
)

// Options configures Run. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling Run.
type Option = option

type config struct {
	monitor Monitor
	each    func(messaging.Delivery, Verdict)
	now     func() time.Time
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
	if c.each == nil {
		c.each = func(messaging.Delivery, Verdict) {}
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Monitor receives the pass's events (default NopMonitor).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}

// Each is called for every message the pass reads, with what became of it:
// Moved (or, in a dry run, would move), Declined by the filter. An operator's
// tool lists the messages with it. It runs on the pass's goroutine, so it
// should return quickly; nil means nothing is called.
func (singleton) Each(each func(delivery messaging.Delivery, verdict Verdict)) option {
	return func(c *config) { c.each = each }
}
