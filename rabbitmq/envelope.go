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
	// The map is ours (Encode made it): only values amqp091 cannot write as
	// they are (a nested map[string]any, in a table or an array) are replaced,
	// and the map itself becomes the table without a copy.
	for name, value := range fields {
		switch value.(type) {
		case map[string]any, amqp.Table, []any:
			fields[name] = tableValue(value)
		}
	}
	headers := amqp.Table(fields)
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
			ContentType:     d.ContentType,
			ContentEncoding: d.ContentEncoding,
			DeliveryMode:    mode,
			CorrelationId:   props.CorrelationID,
			ReplyTo:         d.ReplyTo,
			Expiration:      props.Expiration,
			MessageId:       props.MessageID,
			Timestamp:       props.Timestamp,
			Type:            props.Type,
			Body:            d.Payload,
		},
	}, nil
}

// tableValue returns value as amqp091 writes it: a nested map[string]any (which
// wire.Check accepts and amqp091 does not) becomes an amqp.Table, in arrays and
// tables too. Everything else is returned as is.
func tableValue(value any) any {
	switch v := value.(type) {
	case map[string]any:
		table := make(amqp.Table, len(v))
		for name, item := range v {
			table[name] = tableValue(item)
		}
		return table
	case amqp.Table: // copied too: a map[string]any may be nested in it
		return tableValue(map[string]any(v))
	case []any:
		items := make([]any, len(v))
		for i, item := range v {
			items[i] = tableValue(item)
		}
		return items
	default:
		return value
	}
}

// decodeDelivery reads an AMQP delivery into target, tolerantly: each envelope
// field comes from its header, else its property, else its default. Every
// x-acemq- header is removed from target.Headers.
func decodeDelivery(source amqp.Delivery, queue string, target *messaging.Delivery) {
	h := source.Headers
	*target = messaging.Delivery{
		DeliveryID:      source.DeliveryTag,
		SourceQueue:     queue,
		Topic:           source.Exchange,
		RoutingKey:      source.RoutingKey,
		Redelivered:     source.Redelivered,
		ReplyTo:         source.ReplyTo,
		ContentType:     source.ContentType,
		ContentEncoding: source.ContentEncoding,
		Timestamp:       source.Timestamp,
		Durable:         source.DeliveryMode == deliveryModePersistent,
		Payload:         source.Body,
		Upstream:        source,
	}

	wire.Decode(h, wire.Properties{
		MessageID:     source.MessageId,
		CorrelationID: source.CorrelationId,
		Type:          source.Type,
		Expiration:    source.Expiration,
	}, target)
}
