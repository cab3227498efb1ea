package topology_test

import (
	"context"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/topology"
)

// The plan a subscription's stream declares, printed for a reader, applied
// through a connection's Declarer and checked against the broker. The
// in-memory broker stands in for RabbitMQ here.
func ExampleForStream() {
	plan, err := topology.ForStream(messaging.StreamConfig{
		StreamName:        "orders.ship",
		Topics:            []string{"order-placed"},
		Bindings:          []messaging.StreamBinding{{Exchange: "orders", Key: "order.*"}},
		EstablishTopology: true,
		Replication:       true,
		DeadLetters:       true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(plan)

	broker := memory.New()
	defer broker.Close()
	ctx := context.Background()
	connection, err := broker.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer connection.Close()
	declarer, _ := messaging.As[messaging.Declarer](connection)

	if err := plan.Apply(ctx, declarer); err != nil {
		fmt.Println(err)
		return
	}
	_ = broker.DeleteQueue("orders.ship.parked") // an operator deleted it
	report, err := plan.Check(ctx, declarer)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("healthy:", report.Healthy())
	fmt.Print(report)
	// Output:
	// declare exchange order-placed (fanout, durable)
	// declare exchange orders (topic, durable)
	// declare exchange acemq.dlx (direct, durable)
	// declare queue orders.ship (quorum, durable, x-dead-letter-exchange=acemq.dlx, x-dead-letter-routing-key=orders.ship.dlq)
	// declare queue orders.ship.dlq (classic, durable)
	// declare queue orders.ship.parked (classic, durable)
	// bind order-placed -> orders.ship ("")
	// bind orders -> orders.ship (order.*)
	// bind acemq.dlx -> orders.ship.dlq (orders.ship.dlq)
	// bind acemq.dlx -> orders.ship.parked (orders.ship.parked)
	// healthy: false
	// ok       exchange order-placed
	// ok       exchange orders
	// ok       exchange acemq.dlx
	// ok       queue    orders.ship
	// ok       queue    orders.ship.dlq
	// missing  queue    orders.ship.parked
	// unknown  binding  order-placed -> orders.ship (): AMQP cannot inspect a binding; apply the plan to be sure it exists
	// unknown  binding  orders -> orders.ship (order.*): AMQP cannot inspect a binding; apply the plan to be sure it exists
	// unknown  binding  acemq.dlx -> orders.ship.dlq (orders.ship.dlq): AMQP cannot inspect a binding; apply the plan to be sure it exists
	// missing  binding  acemq.dlx -> orders.ship.parked (orders.ship.parked): queue "orders.ship.parked" is missing
}

// A plan built by hand is validated before any broker is asked.
func ExamplePlan_Validate() {
	plan := topology.Plan{
		Exchanges: []messaging.Exchange{{Name: "invoices", Kind: messaging.ExchangeDirect, Durable: true}},
		Queues:    []messaging.Queue{{Name: "invoices.print", Durable: true}},
		Bindings: []messaging.Binding{
			{Exchange: "invoices", Queue: "invoices.print", Key: "print"},
			{Exchange: "invoices", Queue: "invoices.mail", Key: "mail"},
		},
	}
	fmt.Println(plan.Validate())
	// Output:
	// topology: the plan is invalid: binding invoices -> invoices.mail (mail) names queue "invoices.mail", which this plan does not declare
}
