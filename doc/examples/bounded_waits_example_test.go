package examples_test

import (
	"fmt"

	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/sqlmq"
)

// Example_boundedWaits prints the defaults of the main bounds. Every option
// that sets one replaces zero or a negative value with its default, so a
// bound cannot be turned off by accident: rabbitmq.Options.BrokerTimeout(0)
// is 30 s, not "wait for ever".
func Example_boundedWaits() {
	fmt.Println("rabbitmq broker timeout:", rabbitmq.DefaultBrokerTimeout)
	fmt.Println("rabbitmq heartbeat:", rabbitmq.DefaultHeartbeat)
	fmt.Println("rabbitmq outstanding publishes:", rabbitmq.DefaultMaxOutstandingPublishes)
	fmt.Println("sqlmq retry delay:", sqlmq.DefaultRetryDelay)
	fmt.Println("sqlmq lease timeout:", sqlmq.DefaultLeaseTimeout)
	fmt.Println("sqlmq shutdown timeout:", sqlmq.DefaultShutdownTimeout)

	// Output:
	// rabbitmq broker timeout: 30s
	// rabbitmq heartbeat: 10s
	// rabbitmq outstanding publishes: 1000
	// sqlmq retry delay: 5s
	// sqlmq lease timeout: 1m0s
	// sqlmq shutdown timeout: 30s
}
