package status_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/status"
)

// A /status report: the broker probe (one confirmed publish) and the
// service's other dependencies, each bounded, in the JSON a load balancer or
// an operator reads. No password of an address given to Redact appears in
// it. The in-memory broker stands in for rabbitmq.New(...) here.
func ExampleChecker_Report() {
	broker := memory.New()
	defer broker.Close()

	const dsn = "app:secret@tcp(db.internal:3306)/orders"
	checker := status.New(
		status.Options.Connector(broker),
		status.Options.Check("database", func(ctx context.Context) error {
			return nil // db.PingContext(ctx)
		}),
		status.Options.Check("search", func(ctx context.Context) error {
			return errors.New("dial " + dsn + ": connection refused")
		}),
		status.Options.CheckTimeout(2*time.Second),
		status.Options.Redact(dsn),
		status.Options.Logger(slog.New(slog.DiscardHandler)),
	)
	defer checker.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	report := checker.Report(ctx)
	fmt.Println("healthy:", report.Healthy())
	body, _ := json.MarshalIndent(report, "", "  ")
	fmt.Println(string(body))
	// Output:
	// healthy: false
	// {
	//   "status": "failing",
	//   "checks": [
	//     {
	//       "name": "broker",
	//       "status": "ok"
	//     },
	//     {
	//       "name": "database",
	//       "status": "ok"
	//     },
	//     {
	//       "name": "search",
	//       "status": "failing",
	//       "error": "dial app:xxxxx@tcp(db.internal:3306)/orders: connection refused"
	//     }
	//   ]
	// }
}

// A failure inside the tolerance window (a broker failover) is logged and
// Status stays healthy, so a readiness probe does not restart the service;
// Probe, for an operator's one-off check, reports it as it is.
func ExampleChecker_Status() {
	broker := memory.New()
	checker := status.New(
		status.Options.Connector(broker),
		status.Options.FailureTolerance(30*time.Second),
		status.Options.Logger(slog.New(slog.DiscardHandler)),
	)
	defer checker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	fmt.Println("status:", checker.Status(ctx))
	_ = broker.Close() // the broker goes away
	fmt.Println("status:", checker.Status(ctx))
	err := checker.Probe(ctx)
	fmt.Println("probe failed:", err != nil, "closed:", errors.Is(err, messaging.ErrClosed))
	// Output:
	// status: <nil>
	// status: <nil>
	// probe failed: true closed: true
}
