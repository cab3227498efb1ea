package claimcheck

import "github.com/warrenmq/messaging/internal/options"

// DefaultThreshold is the encoded size, in bytes, from which a payload is
// offloaded to the store (64 KiB, the same in every AceMQ library): a payload
// of len < threshold travels inline, one of exactly the threshold is
// offloaded.
const DefaultThreshold = 64 << 10

// Options is the entry point for configuring New: claimcheck.Options.OffloadAbove(...).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option.
// (Exported so go doc lists them.)
type OptionSet struct{}

// Option configures New.
type Option func(*config)

type config struct {
	threshold int
	monitor   Monitor
}

func newConfig(opts []Option) config {
	c := config{threshold: DefaultThreshold}
	options.Apply(&c, opts)
	if c.threshold < 0 {
		c.threshold = DefaultThreshold
	}
	options.Default[Monitor](&c.monitor, NopMonitor{})
	return c
}

// OffloadAbove sets the threshold: an encoded payload of n bytes or more goes
// to the store, a shorter one travels inline. Default: DefaultThreshold, 64
// KiB. Unlike most options of this module, zero is a real value here: it
// offloads every payload. A negative n means the default.
func (OptionSet) OffloadAbove(n int) Option { return func(c *config) { c.threshold = n } }

// Monitor receives the callbacks. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }
