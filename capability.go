package messaging

import "context"

// A transport offers more than the root contracts say: a Connection may
// declare topology (Declarer), a Stream may return one delivery to its queue
// (Requeuer), a transport may read RabbitMQ streams. A decorator embeds what
// it wraps, so a method it does not override is still there, but a type
// assertion on the decorator sees only the methods of its own type: an
// optional interface of what it wraps is hidden. The convention that keeps
// it found is Unwrap: every decorator of this module returns what it wraps
// from an Unwrap method, and As follows those methods down to the transport.

// Wrapper is a decorator of a Connection: Unwrap returns the Connection it
// decorates.
type Wrapper interface {
	Unwrap() Connection
}

// Requeuer is a Stream that can return one delivery to its queue, alone (an
// AMQP basic.nack with requeue for that delivery tag), while the others it
// has delivered stay unacknowledged and the stream goes on. The runtime uses
// it when a delivery's settlement cannot be completed (a set-aside copy or a
// retry that could not be published), so that one failure redelivers one
// message, not every message the stream holds. Find it with As.
type Requeuer interface {
	Requeue(ctx context.Context, delivery Delivery) error
}

// maxUnwraps bounds the walk of As: a chain deeper than this is taken as a
// cycle.
const maxUnwraps = 64

// As finds a capability T (Declarer, Requeuer, ...) on value or on anything
// beneath it, following the Unwrap methods of decorators of a Connector,
// Connection, Reader, Stream, Writer or CommitWriter, outermost first. It
// reports false when none offers T.
func As[T any](value any) (T, bool) {
	for range maxUnwraps {
		if value == nil {
			break
		}
		if capability, ok := value.(T); ok {
			return capability, true
		}
		if value = unwrap(value); value == nil {
			break
		}
	}
	var zero T
	return zero, false
}

// unwrap returns what value decorates, or nil when it decorates nothing.
func unwrap(value any) any {
	switch w := value.(type) {
	case interface{ Unwrap() Connection }:
		return inner(w)
	case interface{ Unwrap() Stream }:
		return inner(w)
	case interface{ Unwrap() Reader }:
		return inner(w)
	case interface{ Unwrap() CommitWriter }:
		return inner(w)
	case interface{ Unwrap() Writer }:
		return inner(w)
	case interface{ Unwrap() Connector }:
		return inner(w)
	}
	return nil
}

// inner is what w decorates, or nil, not a nil interface of w's kind, when it
// decorates nothing.
func inner[T any](w interface{ Unwrap() T }) any {
	if value := w.Unwrap(); any(value) != nil {
		return value
	}
	return nil
}
