package rabbitmq

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// The AMQP delivery modes of a transient and a persistent dispatch.
const (
	deliveryModeTransient  = amqp.Transient
	deliveryModePersistent = amqp.Persistent
)

// outgoing is a Dispatch encoded for basic.publish.
type outgoing struct {
	id        string
	exchange  string
	key       string
	mandatory bool
	msg       amqp.Publishing
	// refused is why this dispatch was not encoded (wire.Check refused it):
	// the publisher answers it with this error and sends the others.
	refused error
}

// encodeDispatch writes d as AMQP properties and envelope headers with encoder
// (one per write), filling the envelope defaults: a new id, correlation = id,
// type = routing key, version and attempt 1, first seen = the write's time,
// origin = its default origin. It first runs wire.Check
// with maxPayload (<= 0: wire.DefaultMaxPayload), so that nothing the broker
// would refuse, or that would make the client close the connection, is encoded:
// such a dispatch returns the check's *messaging.FieldError (ErrWireLimit) or
// the reserved-header error.
func encodeDispatch(d messaging.Dispatch, encoder *wire.Encoder, maxPayload int) (outgoing, error) {
	if err := wire.Check(d, maxPayload); err != nil {
		return outgoing{}, err
	}
	fields, props := encoder.Encode(d)
	headers := amqp.Table(fields) // the map is ours (Encode made it): no copy
	mode := deliveryModePersistent
	if !props.Persistent {
		mode = deliveryModeTransient
	}
	return outgoing{
		id:        props.ID,
		exchange:  d.Topic,
		key:       d.RoutingKey,
		mandatory: d.Mandatory,
		msg: amqp.Publishing{
			Headers:         headers,
			ContentType:     props.ContentType,
			ContentEncoding: props.ContentEncoding,
			DeliveryMode:    mode,
			CorrelationId:   props.CorrelationID,
			ReplyTo:         props.ReplyTo,
			Expiration:      props.Expiration,
			MessageId:       props.MessageID,
			Timestamp:       props.Timestamp,
			Type:            props.Type,
			Body:            d.Payload,
		},
	}, nil
}

// decodeDelivery reads an AMQP delivery into target, tolerantly: each envelope
// field comes from its header, else its property, else its default. Every
// x-acemq- header is removed from target.Headers.
func decodeDelivery(source amqp.Delivery, queue string, target *messaging.Delivery) {
	*target = messaging.Delivery{
		DeliveryID:  source.DeliveryTag,
		SourceQueue: queue,
		Topic:       source.Exchange,
		RoutingKey:  source.RoutingKey,
		Redelivered: source.Redelivered,
		Durable:     source.DeliveryMode == deliveryModePersistent,
		Payload:     source.Body,
		Upstream:    source,
	}
	wire.Decode(source.Headers, wire.Properties{
		MessageID:       source.MessageId,
		CorrelationID:   source.CorrelationId,
		Type:            source.Type,
		ReplyTo:         source.ReplyTo,
		ContentType:     source.ContentType,
		ContentEncoding: source.ContentEncoding,
		Timestamp:       source.Timestamp,
		Expiration:      source.Expiration,
	}, target)
}
