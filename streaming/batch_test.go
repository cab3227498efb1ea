package streaming

import (
	"testing"

	"github.com/warrenmq/messaging"
)

// A batch of one, the default BatchCapacity, gets both its slices from one
// allocation; every batch gets slices of its own, as handlers may keep them.
func TestBatchSlicesOfABatchOfOneCostOneAllocation(t *testing.T) {
	var messages []any
	var deliveries []messaging.Delivery
	if allocs := testing.AllocsPerRun(100, func() { messages, deliveries = batchSlices(1) }); allocs != 1 {
		t.Fatalf("%.0f allocations for a batch of one, want 1", allocs)
	}
	if len(messages) != 0 || cap(messages) != 1 || len(deliveries) != 0 || cap(deliveries) != 1 {
		t.Fatalf("slices of length %d and %d, capacity %d and %d; want empty with room for one", len(messages), len(deliveries), cap(messages), cap(deliveries))
	}
	again, _ := batchSlices(1)
	again = append(again, "second")
	if messages = append(messages, "first"); messages[0] != "first" || again[0] != "second" {
		t.Fatalf("two batches share their slices")
	}
	many, envelopes := batchSlices(16)
	if cap(many) != 16 || cap(envelopes) != 16 {
		t.Fatalf("room for %d and %d, want 16", cap(many), cap(envelopes))
	}
}
