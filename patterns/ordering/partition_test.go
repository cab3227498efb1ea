package ordering

import (
	"fmt"
	"testing"
)

// fnv1a32 is FNV-1a 32 written out from its definition, to check Partition
// against something other than hash/fnv.
func fnv1a32(data string) uint32 {
	hash := uint32(2166136261)
	for i := 0; i < len(data); i++ {
		hash ^= uint32(data[i])
		hash *= 16777619
	}
	return hash
}

func TestPartitionIsFNV1a32ModN(t *testing.T) {
	known := []struct {
		key  string
		n    int
		want int
	}{
		{"", 8, int(uint32(0x811c9dc5) % 8)},  // the offset basis
		{"a", 8, int(uint32(0xe40c292c) % 8)}, // the published vector for "a"
		{"foobar", 1000, int(uint32(0xbf9cf968) % 1000)},
		{"A-1", 1, 0},
		{"A-1", 0, 0},
		{"A-1", -4, 0},
	}
	for _, k := range known {
		if got := Partition(k.key, k.n); got != k.want {
			t.Errorf("Partition(%q, %d) = %d; want %d", k.key, k.n, got, k.want)
		}
	}
	for i := range 1000 {
		key := fmt.Sprint("order-", i)
		for _, n := range []int{2, 7, 8, 16, 1 << 20} {
			if got, want := Partition(key, n), int(fnv1a32(key)%uint32(n)); got != want {
				t.Fatalf("Partition(%q, %d) = %d; want %d", key, n, got, want)
			}
		}
	}
}

func TestPartitionedRoutingKey(t *testing.T) {
	if got, want := PartitionedRoutingKey("orders", "a", 8), fmt.Sprint("orders.", 0xe40c292c%8); got != want {
		t.Errorf("PartitionedRoutingKey = %q; want %q", got, want)
	}
	if got := PartitionedRoutingKey("orders", "anything", 1); got != "orders.0" {
		t.Errorf("one partition: %q; want orders.0", got)
	}
}
