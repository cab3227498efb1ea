package schedule_test

import (
	"fmt"

	"github.com/warrenmq/messaging/patterns/schedule"
)

// The ladder every service using delayed delivery declares, printed as the
// topology plan `warrenmq schedule topology` prints and checks.
func ExampleTopology() {
	fmt.Print(schedule.Topology())
	// Output:
	// declare exchange acemq.schedule (direct, durable)
	// declare queue acemq.schedule.1h (classic, durable, x-dead-letter-exchange=acemq.schedule, x-dead-letter-routing-key=acemq.schedule.due, x-message-ttl=3600000)
	// declare queue acemq.schedule.10m (classic, durable, x-dead-letter-exchange=acemq.schedule, x-dead-letter-routing-key=acemq.schedule.due, x-message-ttl=600000)
	// declare queue acemq.schedule.1m (classic, durable, x-dead-letter-exchange=acemq.schedule, x-dead-letter-routing-key=acemq.schedule.due, x-message-ttl=60000)
	// declare queue acemq.schedule.10s (classic, durable, x-dead-letter-exchange=acemq.schedule, x-dead-letter-routing-key=acemq.schedule.due, x-message-ttl=10000)
	// declare queue acemq.schedule.1s (classic, durable, x-dead-letter-exchange=acemq.schedule, x-dead-letter-routing-key=acemq.schedule.due, x-message-ttl=1000)
	// declare queue acemq.schedule.due (classic, durable)
	// bind acemq.schedule -> acemq.schedule.1h (acemq.schedule.1h)
	// bind acemq.schedule -> acemq.schedule.10m (acemq.schedule.10m)
	// bind acemq.schedule -> acemq.schedule.1m (acemq.schedule.1m)
	// bind acemq.schedule -> acemq.schedule.10s (acemq.schedule.10s)
	// bind acemq.schedule -> acemq.schedule.1s (acemq.schedule.1s)
	// bind acemq.schedule -> acemq.schedule.due (acemq.schedule.due)
}
