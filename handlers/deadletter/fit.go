package deadletter

import (
	"fmt"
	"strings"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// copyRung is one form of a set-aside copy: the copy itself and what it left
// out, for the reason.
type copyRung struct {
	dispatch messaging.Dispatch
	dropped  string
}

// reductions returns the forms a set-aside copy may take, most faithful first.
// The first is the copy whole (Delivery.Redispatch: its original bytes, its
// envelope, its headers). Each later form exists only for a message whose copy
// the wire refuses (messaging.ErrWireLimit: foreign headers near the frame
// limit, values an AMQP table cannot carry, an envelope too large) and leaves
// out more, so that settlement never fails on the message's own content:
//
//  1. without its application headers;
//  2. also without its causation, origin, claim and route headers;
//  3. also with its id, correlation id and type cut to 255 bytes each.
//
// The payload is always kept whole, and so are the attempt, version,
// first-seen time and timestamp. What was left out is appended to the reason.
func reductions(full messaging.Dispatch) []copyRung {
	rungs := []copyRung{{dispatch: full}}

	bare := full
	bare.Headers = nil
	headersNote := fmt.Sprintf("set aside without its %d application header(s), which did not fit the wire with it", len(full.Headers))
	rungs = append(rungs, copyRung{dispatch: bare, dropped: headersNote})

	plain := bare
	plain.CausationID, plain.Origin, plain.Claim = "", "", ""
	plain.Route, plain.RoutePosition, plain.RouteID = nil, 0, ""
	envelopeNote := headersNote + ", nor its causation, origin, claim and route headers"
	rungs = append(rungs, copyRung{dispatch: plain, dropped: envelopeNote})

	short := plain
	short.MessageID = wire.Cut(plain.MessageID, wire.MaxShortString)
	short.CorrelationID = wire.Cut(plain.CorrelationID, wire.MaxShortString)
	short.MessageType = wire.Cut(plain.MessageType, wire.MaxShortString)
	var shortened []string
	for _, field := range []struct{ name, value string }{
		{"id", plain.MessageID}, {"correlation id", plain.CorrelationID}, {"type", plain.MessageType},
	} {
		if len(field.value) > wire.MaxShortString {
			shortened = append(shortened, fmt.Sprintf("%s (%d bytes)", field.name, len(field.value)))
		}
	}
	note := envelopeNote
	if len(shortened) > 0 {
		note += ", and with its " + strings.Join(shortened, ", ") + fmt.Sprintf(" cut to %d bytes", wire.MaxShortString)
	}
	return append(rungs, copyRung{dispatch: short, dropped: note})
}
