// Package decorate holds the one step every decorator of a Connector takes
// when the layer beneath it opens something (a connection, a reader, a
// stream, a writer): pass the layer's error on, refuse a layer that returned
// neither a value nor an error, and wrap what it opened.
package decorate

import "fmt"

// Opened returns wrap(inner), or err when the layer beneath failed. A nil
// inner with a nil err is a broken layer: it is reported, naming the
// decorator (layer) and what was opened (what), instead of being wrapped and
// dereferenced later.
func Opened[T any](layer, what string, inner T, err error, wrap func(T) T) (T, error) {
	var none T
	if err != nil {
		return none, err
	}
	if any(inner) == nil {
		return none, fmt.Errorf("%s: the wrapped layer returned no %s and no error; it is broken", layer, what)
	}
	return wrap(inner), nil
}
