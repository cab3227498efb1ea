package rabbitmq

import (
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// Encoding a plain dispatch of a write allocates a bounded number of times:
// the header map (sized to one group) and the new id, boxed once. The time,
// the default origin and the type are boxed once per write. A regression here
// is paid per message on the broker's own two cores.
func TestEncodingADispatchOfAWriteAllocatesAtMostFourTimes(t *testing.T) {
	d := messaging.Dispatch{RoutingKey: "orders", Mandatory: true, ContentType: "application/octet-stream", Payload: make([]byte, 1024)}
	encoder := wire.NewEncoder(time.Now(), "acemq@host")
	allocs := testing.AllocsPerRun(1000, func() { _, _ = encodeDispatch(d, &encoder, 0) })
	if limit := float64(4 + raceAllocs); allocs > limit {
		t.Fatalf("encodeDispatch allocates %.0f times per dispatch; want at most %.0f", allocs, limit)
	}
}
