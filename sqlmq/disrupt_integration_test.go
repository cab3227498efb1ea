package sqlmq

import (
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// The broker refuses publishes (a memory alarm) and drops every connection
// twice while a backlog builds; once it recovers, everything committed arrives.
func TestIntegrationTheBacklogDrainsAfterTheBrokerBlocksAndDropsEveryConnection(t *testing.T) {
	url := testenv.Disrupt(t)
	b := backends[0] // MariaDB, the primary dialect
	db := b.open(t)
	table := outboxTable(t, b, db)
	setup := newBrokerAt(t, url)
	exchange := setup.exchange("storm")
	queue := setup.queue("storm", exchange)
	log := newLogRecorder()
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.BrokerTimeout(2*time.Second))
	outbox := newInstanceOver(t, transport, b, db, table, Options.Logger(slog.New(log)), Options.ChannelBufferCapacity(64))
	start := time.Now()

	t.Cleanup(func() { testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.4") })
	testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0")
	outbox.listen(t)
	all := messageIDs("storm", 2000)
	random := rand.New(rand.NewPCG(3, 4))
	for start := 0; start < len(all); {
		size := min(1+random.IntN(100), len(all)-start)
		outbox.commit(t, dispatchesTo(exchange, all[start:start+size]...)...)
		start += size
	}
	log.Await(t, "Unable to publish")
	t.Logf("%s: backlog committed, publishing refused", time.Since(start))
	testenv.Rabbitmqctl(t, "close_all_connections", "sqlmq outbox test")
	testenv.Rabbitmqctl(t, "close_all_connections", "sqlmq outbox test")
	testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.4")
	t.Logf("%s: connections dropped twice, alarm cleared", time.Since(start))

	received := newBrokerAt(t, url).consume(queue)
	received.await(all...)
	t.Logf("%s: everything arrived", time.Since(start))
	awaitDispatched(t, db, table, len(all), outbox)
	_, count := received.snapshot()
	duplicates := 0
	for _, id := range all {
		duplicates += count[id] - 1
	}
	failures := 0
	for _, line := range log.Lines() {
		if strings.Contains(line, "Unable to publish") {
			failures++
		}
	}
	t.Logf("%d messages through a memory alarm and two connection storms (%d failed publish rounds): none lost, %d duplicate(s)", len(all), failures, duplicates)
}
