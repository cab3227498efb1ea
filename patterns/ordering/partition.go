package ordering

import (
	"hash/fnv"
	"strconv"
)

// Partition returns the partition of key among n: the FNV-1a 32-bit hash of
// the key's bytes modulo n, as the AceMQ libraries compute it, so a producer
// choosing a routing key and a consumer group owning partitions agree on where
// a key goes. n <= 1 is partition 0.
func Partition(key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key)) // a hash.Hash never returns an error
	return int(h.Sum32() % uint32(n))
}

// PartitionedRoutingKey returns "{base}.{partition}" for key among n
// partitions, e.g. PartitionedRoutingKey("orders", order.ID, 8) is
// "orders.3": publish with it, and bind partition p's queue with base.p, so
// every message about one key reaches the same queue and its one consumer.
func PartitionedRoutingKey(base, key string, n int) string {
	return base + "." + strconv.Itoa(Partition(key, n))
}
