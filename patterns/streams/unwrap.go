package streams

import "github.com/warrenmq/messaging"

// Unwrap returns the transport's connector, so messaging.As finds what it
// offers (whether it consumes stream queues, say) beneath the resuming layer.
func (c *resumingConnector) Unwrap() messaging.Connector { return c.Connector }

// Unwrap returns the transport's reader, so messaging.As finds its
// capabilities beneath the resuming layer.
func (r *resumingReader) Unwrap() messaging.Reader { return r.Reader }

// resumingStream has no Unwrap on purpose: it reads a stream queue, and
// RabbitMQ answers a basic.nack on one by closing the whole connection
// (540 NOT_IMPLEMENTED). Hiding the transport's messaging.Requeuer makes the
// runtime end this session instead when a settlement cannot be completed;
// the next consumer starts at the oldest offset handed over and not settled,
// so the delivery is read again.
