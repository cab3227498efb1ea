package prometheus_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	_ "modernc.org/sqlite" // the in-process SQLite driver; a service links its own

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/sqltx"
	"github.com/warrenmq/messaging/monitoring/prometheus"
	"github.com/warrenmq/messaging/retrypolicy"
)

type InvoiceRequested struct{ OrderID string }

// One Metrics serves every package's Monitor, one line each: here retry
// around a transaction per batch, whose first attempt fails and is rolled
// back, and whose second commits. The counters say so.
func ExampleNew() {
	registry := prom.NewRegistry()
	metrics, err := prometheus.New(registry, "invoices")
	if err != nil {
		fmt.Println(err)
		return
	}

	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	_, _ = db.Exec("CREATE TABLE invoices (order_id TEXT PRIMARY KEY)")

	quiet := slog.New(slog.DiscardHandler)
	tries := 0
	handler := retry.New(
		sqltx.New(db, func(tx *sql.Tx) messaging.Handler {
			return messaging.HandleEach(func(ctx context.Context, invoice InvoiceRequested) error {
				if tries++; tries == 1 {
					return fmt.Errorf("invoice %s: the printer is jammed", invoice.OrderID)
				}
				_, err := tx.ExecContext(ctx, "INSERT INTO invoices (order_id) VALUES (?)", invoice.OrderID)
				return err
			})
		}, sqltx.Options.Monitor(metrics.Transactional()), sqltx.Options.Logger(quiet)),
		retry.Options.Policy(retrypolicy.Fixed(3, time.Millisecond)),
		retry.Options.Monitor(metrics.Retry()),
		retry.Options.Logger(quiet),
	)
	handler.Handle(context.Background(), InvoiceRequested{OrderID: "o-7"})

	families, err := registry.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, family := range families {
		if !strings.HasPrefix(family.GetName(), "handler_") {
			continue
		}
		for _, metric := range family.GetMetric() {
			var labels []string
			for _, label := range metric.GetLabel() {
				labels = append(labels, label.GetName()+"="+label.GetValue())
			}
			fmt.Printf("%s{%s} %v\n", family.GetName(), strings.Join(labels, ","), metric.GetCounter().GetValue())
		}
	}
	// Output:
	// handler_attempts_total{result=failure,stream=other} 1
	// handler_attempts_total{result=success,stream=other} 1
	// handler_transaction_events_total{event=committed,result=success} 1
	// handler_transaction_events_total{event=rolled_back,result=success} 1
	// handler_transaction_events_total{event=started,result=success} 2
}
