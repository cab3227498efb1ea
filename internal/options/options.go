// Package options holds what every package's functional options share: a
// package declares its own Option type (func(*config)) and OptionSet, applies
// the options a caller gave with Apply, and states each option's default
// with Default (a zero value means the default) or Positive (a zero or
// negative value means the default).
package options

// Apply calls each non-nil option on c, in order: a later option overrides an
// earlier one, and a nil option (from a conditional list) is skipped.
func Apply[C any, O ~func(*C)](c *C, options []O) {
	for _, option := range options {
		if option != nil {
			option(c)
		}
	}
}

// New returns a config built from its zero value by the options, in order,
// as Apply does: how a newConfig starts when its defaults are stated after the
// options (with Default and Positive) rather than before them.
func New[C any, O ~func(*C)](options []O) C {
	var c C
	Apply(&c, options)
	return c
}

// Default sets *field to def when it holds its type's zero value: a nil
// interface, pointer, map or channel, an empty string, a zero struct. It is
// how a newConfig states an option's default where leaving the option out and
// giving it the zero value both mean the default. With an interface field,
// name the type: options.Default[Monitor](&c.monitor, NopMonitor{}).
func Default[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}

// Positive sets *field to def when it is zero or negative: how a newConfig
// states the default of a bound, a size or a count that a zero or negative
// value must never turn off.
func Positive[T ~int | ~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64](field *T, def T) {
	if *field <= 0 {
		*field = def
	}
}
