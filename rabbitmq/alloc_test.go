package rabbitmq

import (
	"testing"
	"time"

	"github.com/warrenmq/messaging"
)

// Encoding a plain dispatch allocates a bounded number of times: the header
// map, the new id, and the boxed envelope values. A regression here is paid
// per message on the broker's own two cores.
func TestEncodingADispatchAllocatesAtMostNineTimes(t *testing.T) {
	d := messaging.Dispatch{RoutingKey: "orders", Mandatory: true, ContentType: "application/octet-stream", Payload: make([]byte, 1024)}
	now := time.Now()
	allocs := testing.AllocsPerRun(1000, func() { _, _ = encodeDispatch(d, now, "acemq@host", 0) })
	if limit := float64(9 + raceAllocs); allocs > limit {
		t.Fatalf("encodeDispatch allocates %.0f times per dispatch; want at most %.0f", allocs, limit)
	}
}
