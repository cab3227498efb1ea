package wire

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
)

// FuzzEnvelopeRoundTrip encodes a dispatch and decodes what it encoded: every
// envelope field comes back as the dispatch had it, or as its default, and the
// application headers (a plain map[string]any) come back unchanged with no
// reserved header among them.
func FuzzEnvelopeRoundTrip(f *testing.F) {
	f.Add("id-1", "", "", "orders.placed", "", "", "", "", "", "", 0, 0, 0, int64(0), int64(0), false, "x-tenant", "acme", int64(7))
	f.Add("", "corr", "OrderPlaced", "k", "cause", "svc@host", "boom", "claim", "a,b,c", "r1", 3, 5, 2, int64(1700000000123), int64(1500*time.Microsecond), true, "x-a", "", int64(-1))
	f.Add("", "", "", "", "", "", "", "", ",", "", math.MaxInt32+9, -4, -1, int64(-62135596800000), int64(-time.Second), false, "x-acemq-id", "v", int64(math.MaxInt64))
	f.Add(strings.Repeat("i", 300), "", strings.Repeat("t", 300), "k", "", "", "", "", "a", "", 1, 1, math.MinInt, int64(1), int64(time.Nanosecond), false, "", "", int64(0))
	now := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	f.Fuzz(func(t *testing.T, id, correlation, messageType, key, causation, origin, errText, claim, route, routeID string,
		version, attempt, position int, firstSeenMs, ttl int64, transient bool, headerName, text string, number int64) {
		d := messaging.Dispatch{
			MessageID: id, CorrelationID: correlation, MessageType: messageType, RoutingKey: key,
			CausationID: causation, Origin: origin, Error: errText, Claim: claim, RouteID: routeID,
			Version: version, Attempt: attempt, RoutePosition: position,
			Expiration: time.Duration(ttl % (1 << 50)), Transient: transient, Verbatim: true,
			ReplyTo: "replies", ContentType: "application/json", ContentEncoding: "gzip",
			Headers: map[string]any{headerName: text, headerName + "-n": number, headerName + "-b": number%2 == 0},
		}
		if route != "" {
			d.Route = strings.Split(route, ",")
		}
		if firstSeenMs != 0 {
			d.FirstSeen = time.UnixMilli(firstSeenMs)
		}
		if err := Check(d, 0); err != nil {
			t.Skip(err) // refused before encoding: nothing to round-trip
		}

		headers, props := Encode(d, now, "default@origin")
		for name, value := range headers {
			if !IsReserved(name) {
				continue
			}
			switch value.(type) {
			case string, int32, int64:
			default:
				t.Fatalf("envelope header %q is a %T, not a string, int32 or int64", name, value)
			}
		}
		if props.Persistent == transient {
			t.Fatalf("persistent %v for transient %v", props.Persistent, transient)
		}
		got := messaging.Delivery{RoutingKey: key}
		Decode(headers, props, &got)

		wantID := firstString(id, props.ID)
		if props.ID == "" || got.MessageID != wantID {
			t.Fatalf("id %q (encoded %q), want %q", got.MessageID, props.ID, wantID)
		}
		wantFirstSeen := d.FirstSeen
		if wantFirstSeen.IsZero() {
			wantFirstSeen = now
		}
		wantFirstSeen = time.UnixMilli(wantFirstSeen.UnixMilli()).UTC()
		want := messaging.Delivery{
			RoutingKey:    key,
			MessageID:     wantID,
			CorrelationID: firstString(correlation, wantID),
			MessageType:   firstString(messageType, key),
			CausationID:   causation,
			Version:       min(max(version, 1), math.MaxInt32),
			Attempt:       min(max(attempt, 1), math.MaxInt32),
			FirstSeen:     wantFirstSeen,
			Origin:        firstString(origin, "default@origin"),
			Error:         errText,
			Claim:         claim,
			Expiration:    RoundExpiration(d.Expiration),
			Headers:       d.Headers,
			Timestamp:     now,

			ReplyTo: "replies", ContentType: "application/json", ContentEncoding: "gzip",
		}
		if route != "" {
			want.Route = d.Route
			want.RoutePosition = min(max(position, 0), math.MaxInt32)
			want.RouteID = routeID
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
		}
		wantTimestamp := now
		if !reflect.DeepEqual(props.Timestamp, wantTimestamp) {
			t.Fatalf("timestamp %v, want %v", props.Timestamp, wantTimestamp)
		}
		if FitsProperty(wantID) != (props.MessageID == wantID) || !FitsProperty(wantID) && props.MessageID != "" {
			t.Fatalf("message id property %q for id %q", props.MessageID, wantID)
		}
	})
}

func TestSetAsideQueueNames(t *testing.T) {
	if got := DeadLetterQueue("orders"); got != "orders.dlq" {
		t.Fatalf("dead-letter queue %q, want orders.dlq", got)
	}
	if got := ParkedQueue("orders"); got != "orders.parked" {
		t.Fatalf("parked queue %q, want orders.parked", got)
	}
}

func TestExpirationTravelsInWholeMillisecondsRoundedUp(t *testing.T) {
	for ttl, want := range map[time.Duration]string{
		time.Second: "1000", time.Minute: "60000", 1500 * time.Microsecond: "2",
		time.Nanosecond: "1", 0: "", -time.Second: "",
	} {
		if got := ExpirationMillis(ttl); got != want {
			t.Errorf("ExpirationMillis(%s) = %q, want %q", ttl, got, want)
		}
	}
	for value, want := range map[string]time.Duration{
		"1000": time.Second, "": 0, "soon": 0, "99999999999999999": time.Duration(math.MaxInt64),
	} {
		if got := ParseExpiration(value); got != want {
			t.Errorf("ParseExpiration(%q) = %s, want %s", value, got, want)
		}
	}
	// Most deliveries carry none: reading that must not allocate (a parse
	// error for every delivered message did).
	if allocs := testing.AllocsPerRun(1000, func() { _ = ParseExpiration("") }); allocs != 0 {
		t.Errorf("ParseExpiration(\"\") allocates %.0f times per call, want 0", allocs)
	}
}

// TestAnEncoderWritesWhatEncodeWritesForEachDispatch: the values an Encoder
// shares between the dispatches of a write change no header: each map equals,
// value and type, what Encode writes for that dispatch alone, whichever
// defaults the dispatches before it took.
func TestAnEncoderWritesWhatEncodeWritesForEachDispatch(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	dispatches := []messaging.Dispatch{
		{MessageID: "a", RoutingKey: "orders"},
		{MessageID: "b", RoutingKey: "orders"},
		{MessageID: "c", RoutingKey: "orders", MessageType: "OrderPlaced"},
		{MessageID: "d", RoutingKey: "orders"},
		{MessageID: "e", RoutingKey: "", Origin: "svc@elsewhere", FirstSeen: time.UnixMilli(1_700_000_000_123)},
		{MessageID: "f", RoutingKey: "billing", CorrelationID: "c-1", Headers: map[string]any{"x-tenant": "acme"}},
		{MessageID: "g", RoutingKey: "billing", Route: []string{"a", "b"}, RouteID: "r", CausationID: "h", Error: "boom", Claim: "k"},
		{MessageID: "h", RoutingKey: "orders"},
	}
	for _, origin := range []string{"default@origin", ""} {
		encoder := NewEncoder(now, origin)
		for _, d := range dispatches {
			got, gotProps := encoder.Encode(d)
			want, wantProps := Encode(d, now, origin)
			if !reflect.DeepEqual(got, want) || gotProps != wantProps {
				t.Fatalf("origin %q, dispatch %s: the encoder wrote\n%#v %+v\nEncode wrote\n%#v %+v", origin, d.MessageID, got, gotProps, want, wantProps)
			}
			if origin == "" && got[HeaderOrigin] != nil && d.Origin == "" {
				t.Fatalf("dispatch %s without an origin got one: %#v", d.MessageID, got[HeaderOrigin])
			}
		}
	}
}

// TestEncodingSizesTheHeaderMapExactly: a dispatch with the usual envelope
// (seven headers) costs one map of one group, not a map sized for more.
func TestEncodingSizesTheHeaderMapExactly(t *testing.T) {
	d := messaging.Dispatch{MessageID: "m-1", RoutingKey: "orders"}
	encoder := NewEncoder(time.Now(), "acemq@host")
	headers, _ := encoder.Encode(d)
	if len(headers) != 7 {
		t.Fatalf("%d envelope headers, want 7: %v", len(headers), headers)
	}
	if allocs := testing.AllocsPerRun(1000, func() { _, _ = encoder.Encode(d) }); allocs > 3 {
		t.Fatalf("encoding a dispatch with an id allocates %.0f times; want at most 3 (the map's two and the boxed id)", allocs)
	}
}
