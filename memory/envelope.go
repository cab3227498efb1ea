package memory

import (
	"bytes"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// message is a published message as the broker holds it: the envelope with
// every default filled and every value copied, so the publisher cannot change it.
type message struct {
	exchange    string
	routingKey  string
	envelope    messaging.Dispatch
	redelivered bool
	expiresAt   time.Time // zero: never
	refused     error     // why the write refused this dispatch (wire.Check); never held in a queue
}

// envelopeOf fills the transport's defaults into a copy of dispatch and makes
// it what the RabbitMQ transport puts on the wire and reads back: header
// values take the form a consumer reads after a trip through an AMQP table
// (wire.ReceivedHeaders), and the envelope goes through the wire contract's
// own encoding and decoding (wire.Encode, wire.DecodeEnvelope), so that its
// defaults and rounding (first seen to milliseconds, expiration up to whole
// milliseconds, version and attempt at least 1, a route comma-joined) are the
// RabbitMQ transport's; the timestamp keeps whole seconds, as an AMQP
// timestamp does. wire.Check has refused what cannot travel.
func envelopeOf(dispatch messaging.Dispatch, now time.Time, origin string) messaging.Dispatch {
	e := dispatch
	headers := wire.ReceivedHeaders(e.Headers)
	e.Headers = nil
	fields, props := wire.Encode(e, now, origin)
	envelope := wire.DecodeEnvelope(fields, props, e.RoutingKey)
	envelope.Timestamp = time.Unix(props.Timestamp.Unix(), 0).UTC()
	e.SetEnvelope(envelope)
	e.Headers = headers
	e.Payload = bytes.Clone(e.Payload)
	e.Message = nil
	return e
}

// delivery turns a held message into what a consumer reads; every mutable value
// is copied again so consumers of different queues cannot affect one another.
func (m *message) delivery(queue string, tag uint64) messaging.Delivery {
	d := messaging.Delivery{
		DeliveryID:  tag,
		SourceQueue: queue,
		Topic:       m.exchange,
		RoutingKey:  m.routingKey,
		Redelivered: m.redelivered,
		Durable:     !m.envelope.Transient,
		Headers:     wire.ReceivedHeaders(m.envelope.Headers),
		Payload:     bytes.Clone(m.envelope.Payload),
	}
	d.SetEnvelope(m.envelope.Envelope().Clone())
	return d
}

// copyFor returns a copy of m to hold in another queue.
func (m *message) copyFor() *message {
	c := *m
	return &c
}
