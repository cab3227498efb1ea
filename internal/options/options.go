// Package options holds what every package's functional options share: a
// package declares its own Option type (func(*config)) and OptionSet, and
// applies the options a caller gave with Apply.
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
