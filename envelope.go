package messaging

import (
	"maps"
	"slices"
	"time"
)

// Envelope is what a message says about itself: its identity, its place in a
// conversation, its type and encoding, its retry bookkeeping and its route.
// Dispatch and Delivery both carry these fields flat, so that a literal such as
// Dispatch{MessageID: "x"} stays short; Envelope is the one place that knows
// which fields they share, and the conversions below are the one copy of them
// that every transport, the outbox and settlement call. A field added here and
// to both structs is carried everywhere; a test fails until it is.
type Envelope struct {
	MessageID     string
	CorrelationID string
	CausationID   string
	ReplyTo       string
	MessageType   string
	// Version is the message schema version; 0 is written as 1.
	Version         int
	ContentType     string
	ContentEncoding string
	// Attempt counts deliveries for retry republishes; 0 is written as 1.
	Attempt int
	// FirstSeen is when the message first entered the system.
	FirstSeen time.Time
	// Origin names the producing service as service@host.
	Origin string
	// Error is the reason a dead-lettered or parked copy was set aside.
	Error string
	// Claim is reserved for applications (x-acemq-claim).
	Claim string
	// Route, RoutePosition and RouteID carry a declared pipeline route.
	Route         []string
	RoutePosition int
	RouteID       string
	// Expiration is the per-message TTL; it travels in milliseconds.
	Expiration time.Duration
	// Timestamp is the AMQP timestamp property.
	Timestamp time.Time
}

// Clone returns a copy of e that shares no slice with it.
func (e Envelope) Clone() Envelope {
	e.Route = slices.Clone(e.Route)
	return e
}

// Envelope returns the envelope fields of d. The Route slice is shared with d.
func (d Dispatch) Envelope() Envelope {
	return Envelope{
		MessageID: d.MessageID, CorrelationID: d.CorrelationID, CausationID: d.CausationID,
		ReplyTo: d.ReplyTo, MessageType: d.MessageType, Version: d.Version,
		ContentType: d.ContentType, ContentEncoding: d.ContentEncoding, Attempt: d.Attempt,
		FirstSeen: d.FirstSeen, Origin: d.Origin, Error: d.Error, Claim: d.Claim,
		Route: d.Route, RoutePosition: d.RoutePosition, RouteID: d.RouteID,
		Expiration: d.Expiration, Timestamp: d.Timestamp,
	}
}

// SetEnvelope replaces the envelope fields of d with e's; the other fields of
// d (address, headers, payload, flags) are left as they are.
func (d *Dispatch) SetEnvelope(e Envelope) {
	d.MessageID, d.CorrelationID, d.CausationID = e.MessageID, e.CorrelationID, e.CausationID
	d.ReplyTo, d.MessageType, d.Version = e.ReplyTo, e.MessageType, e.Version
	d.ContentType, d.ContentEncoding, d.Attempt = e.ContentType, e.ContentEncoding, e.Attempt
	d.FirstSeen, d.Origin, d.Error, d.Claim = e.FirstSeen, e.Origin, e.Error, e.Claim
	d.Route, d.RoutePosition, d.RouteID = e.Route, e.RoutePosition, e.RouteID
	d.Expiration, d.Timestamp = e.Expiration, e.Timestamp
}

// Envelope returns the envelope fields of d. The Route slice is shared with d.
func (d Delivery) Envelope() Envelope {
	return Envelope{
		MessageID: d.MessageID, CorrelationID: d.CorrelationID, CausationID: d.CausationID,
		ReplyTo: d.ReplyTo, MessageType: d.MessageType, Version: d.Version,
		ContentType: d.ContentType, ContentEncoding: d.ContentEncoding, Attempt: d.Attempt,
		FirstSeen: d.FirstSeen, Origin: d.Origin, Error: d.Error, Claim: d.Claim,
		Route: d.Route, RoutePosition: d.RoutePosition, RouteID: d.RouteID,
		Expiration: d.Expiration, Timestamp: d.Timestamp,
	}
}

// SetEnvelope replaces the envelope fields of d with e's; where and how d
// arrived, its headers and its payload are left as they are.
func (d *Delivery) SetEnvelope(e Envelope) {
	d.MessageID, d.CorrelationID, d.CausationID = e.MessageID, e.CorrelationID, e.CausationID
	d.ReplyTo, d.MessageType, d.Version = e.ReplyTo, e.MessageType, e.Version
	d.ContentType, d.ContentEncoding, d.Attempt = e.ContentType, e.ContentEncoding, e.Attempt
	d.FirstSeen, d.Origin, d.Error, d.Claim = e.FirstSeen, e.Origin, e.Error, e.Claim
	d.Route, d.RoutePosition, d.RouteID = e.Route, e.RoutePosition, e.RouteID
	d.Expiration, d.Timestamp = e.Expiration, e.Timestamp
}

// Redispatch returns a Dispatch that republishes this delivery's original bytes
// and envelope (same id, correlation, type, headers, attempt) to the given
// queue through the default exchange, mandatory and persistent, and Verbatim:
// an envelope value that arrived too long for an AMQP property stays in its
// header. Settlement, retry and replay build on it so a set-aside copy is the
// message that arrived.
func (d Delivery) Redispatch(queue string) Dispatch {
	dispatch := Dispatch{
		RoutingKey: queue,
		Mandatory:  true,
		Headers:    maps.Clone(d.Headers),
		Payload:    d.Payload,
		Verbatim:   true,
	}
	dispatch.SetEnvelope(d.Envelope().Clone())
	return dispatch
}
