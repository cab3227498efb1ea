package claimcheck

import (
	"testing"

	"github.com/warrenmq/messaging/serialization"
)

// order is a typical message below the threshold: a few fields and a few
// lines, some hundreds of bytes of JSON.
type order struct {
	ID       string  `json:"id"`
	Customer string  `json:"customer"`
	Currency string  `json:"currency"`
	Total    float64 `json:"total"`
	Lines    []line  `json:"lines"`
}

type line struct {
	SKU      string  `json:"sku"`
	Quantity int     `json:"quantity"`
	Price    float64 `json:"price"`
}

func sampleOrder() order {
	o := order{ID: "9b2f0c1e-4d7a-4a51-8f0e-2c6d1f3b7a90", Customer: "customer-1234", Currency: "EUR", Total: 129.5}
	for i := range 5 {
		o.Lines = append(o.Lines, line{SKU: "SKU-000" + string(rune('0'+i)), Quantity: i + 1, Price: 12.95})
	}
	return o
}

// roundTrip encodes and decodes one order with codec, the cost a message
// pays on its way from a publisher to a handler.
func roundTrip(b *testing.B, codec Delegate) {
	message := sampleOrder()
	b.ReportAllocs()
	for b.Loop() {
		payload, err := codec.Serialize(message)
		if err != nil {
			b.Fatal(err)
		}
		var decoded order
		if err := codec.Deserialize(payload, &decoded); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInnerJSON is the delegate alone.
func BenchmarkInnerJSON(b *testing.B) { roundTrip(b, serialization.JSON{}) }

// BenchmarkClaimCheckInline is the same message through the claim check,
// below its threshold: framed inline, the store never called.
func BenchmarkClaimCheckInline(b *testing.B) {
	codec, _ := New(nil, NewMemoryStore())
	roundTrip(b, codec)
}
