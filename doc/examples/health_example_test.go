package examples_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/status"
)

// Example_healthChecks serves /status from a status.Checker. Each probe
// publishes one confirmed message; failures inside the tolerance window are
// logged and reported healthy, so a broker failover does not restart the
// service. The in-memory broker stands in for RabbitMQ here.
func Example_healthChecks() {
	broker := memory.New()
	defer broker.Close()
	checker := status.New(
		status.Options.Connector(broker),
		status.Options.FailureTolerance(30*time.Second),
		status.Options.SeverTimeout(5*time.Second),
		status.Options.Logger(quiet),
	)
	defer checker.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		// Always give the probe a deadline.
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := checker.Status(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})

	response := httptest.NewRecorder()
	mux.ServeHTTP(response, httptest.NewRequest(http.MethodGet, "/status", nil))
	fmt.Print(response.Code, " ", response.Body.String())

	// Output:
	// 200 ok
}
