package examples_test

import (
	"context"
	"fmt"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/monitoring/prometheus"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// Example_monitoring registers the ready-made Prometheus monitors and wires
// one into the outbox; after one message is stored and confirmed, the
// stored-minus-confirmed gap the alert rules watch is back to zero. With
// RabbitMQ, pass metrics.Transport() to rabbitmq.Options.Monitor and
// metrics.Streaming() to streaming.Options.Monitor in the same way.
func Example_monitoring() {
	db, cleanup, err := openSQLite()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	registry := prom.NewRegistry()
	// The stream label takes only these values (and "other").
	metrics, err := prometheus.New(registry, "invoices")
	if err != nil {
		fmt.Println(err)
		return
	}

	transport := memory.New()
	defer transport.Close()
	_ = transport.DeclareQueue("invoices", memory.QueueOptions{Durable: true})
	outbox, dispatcher := sqlmq.New(transport,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.Dialect(sqldialect.SQLite),
		sqlmq.Options.Monitor(metrics.Outbox()),
		sqlmq.Options.Logger(quiet),
	)
	go dispatcher.Listen()

	ctx := context.Background()
	connection, err := outbox.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer connection.Close()
	writer, err := connection.Writer(ctx) // each Write commits a transaction of its own
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: "invoices", Payload: []byte("o-8")}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := readOne(transport, "invoices"); err != nil {
		fmt.Println(err)
		return
	}
	_ = dispatcher.Close() // the confirmed row is marked before Close returns

	values, err := gather(registry, "outbox_stored_total", "outbox_confirmed_total")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stored:", values["outbox_stored_total"])
	fmt.Println("confirmed:", values["outbox_confirmed_total"])
	fmt.Println("gap:", values["outbox_stored_total"]-values["outbox_confirmed_total"])

	// Output:
	// stored: 1
	// confirmed: 1
	// gap: 0
}

// gather reads the current value of unlabelled counters from registry.
func gather(registry *prom.Registry, names ...string) (map[string]float64, error) {
	families, err := registry.Gather()
	if err != nil {
		return nil, err
	}
	values := map[string]float64{}
	for _, family := range families {
		for _, name := range names {
			if family.GetName() == name && len(family.GetMetric()) > 0 {
				values[name] = family.GetMetric()[0].GetCounter().GetValue()
			}
		}
	}
	return values, nil
}
