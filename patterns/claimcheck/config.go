package claimcheck

// DefaultThreshold is the encoded size, in bytes, from which a payload is
// offloaded to the store (64 KiB, the same in every AceMQ library): a payload
// of len < threshold travels inline, one of exactly the threshold is
// offloaded.
const DefaultThreshold = 64 << 10

// Options configures New. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

type config struct {
	threshold int
	monitor   Monitor
}

func newConfig(options []option) config {
	c := config{threshold: DefaultThreshold}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	return c
}

// OffloadAbove sets the threshold: an encoded payload of n bytes or more goes
// to the store, a shorter one travels inline (default DefaultThreshold).
// Unlike most options of this module, zero is a real value here: it offloads
// every payload. A negative n means the default.
func (singleton) OffloadAbove(n int) option {
	return func(c *config) {
		if n < 0 {
			n = DefaultThreshold
		}
		c.threshold = n
	}
}

// Monitor receives the counts (default: none).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}
