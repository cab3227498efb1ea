package sqlmq

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Ten thousand messages in transactions of 1 to 100 on the primary dialect:
// each arrives exactly once, and each transaction's messages in their order.
func TestIntegrationTenThousandMessagesArriveOnceInCommitOrder(t *testing.T) {
	b := backends[0]   // MariaDB
	mq := newBroker(t) // the broker lock before the database's
	db := b.open(t)
	table := outboxTable(t, b, db)
	exchange := mq.exchange("volume")
	received := mq.consume(mq.queue("volume", exchange))
	outbox := newInstance(t, b, db, table)
	outbox.listen(t)

	start := time.Now()
	all := messageIDs("volume", 10000)
	var transactions [][]string
	random := rand.New(rand.NewPCG(5, 6))
	for first := 0; first < len(all); {
		size := min(1+random.IntN(100), len(all)-first)
		transactions = append(transactions, all[first:first+size])
		outbox.commit(t, dispatchesTo(exchange, all[first:first+size]...)...)
		first += size
	}
	received.awaitArrival(db, table, all...)
	t.Logf("%d messages in %d transactions published and received in %s", len(all), len(transactions), time.Since(start))

	order, count := received.snapshot()
	for _, id := range all {
		if count[id] != 1 {
			t.Errorf("message %s arrived %d times", id, count[id])
		}
	}
	position := make(map[string]int, len(order))
	for i, id := range order {
		if _, seen := position[id]; !seen {
			position[id] = i
		}
	}
	for _, transaction := range transactions {
		for i := 1; i < len(transaction); i++ {
			if position[transaction[i-1]] > position[transaction[i]] {
				t.Fatalf("%s arrived before %s, which its transaction wrote first", transaction[i], transaction[i-1])
			}
		}
	}
	awaitDispatched(t, db, table, len(all), outbox)
}
