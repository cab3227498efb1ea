package messaging

import "maps"

// Redispatch returns a Dispatch that republishes this delivery's original bytes
// and envelope (same id, correlation, type, headers, attempt) to the given queue
// through the default exchange, mandatory and persistent, and Verbatim: an
// envelope value that arrived too long for an AMQP property stays in its header. Settlement, retry and
// replay build on it so a set-aside copy is the message that arrived.
func (d Delivery) Redispatch(queue string) Dispatch {
	return Dispatch{
		Topic:           "",
		RoutingKey:      queue,
		MessageID:       d.MessageID,
		CorrelationID:   d.CorrelationID,
		CausationID:     d.CausationID,
		ReplyTo:         d.ReplyTo,
		MessageType:     d.MessageType,
		Version:         d.Version,
		ContentType:     d.ContentType,
		ContentEncoding: d.ContentEncoding,
		Attempt:         d.Attempt,
		FirstSeen:       d.FirstSeen,
		Origin:          d.Origin,
		Error:           d.Error,
		Claim:           d.Claim,
		Route:           append([]string(nil), d.Route...),
		RoutePosition:   d.RoutePosition,
		RouteID:         d.RouteID,
		Expiration:      d.Expiration,
		Timestamp:       d.Timestamp,
		Mandatory:       true,
		Headers:         maps.Clone(d.Headers),
		Payload:         d.Payload,
		Verbatim:        true,
	}
}
