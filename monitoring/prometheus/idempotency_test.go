package prometheus

import (
	"errors"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestIdempotencyMonitorCountsOutcomesAndStoreErrors(t *testing.T) {
	metrics, err := New(prom.NewRegistry(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	monitor := metrics.Idempotency()
	monitor.Claimed("orders")
	monitor.Claimed("orders")
	monitor.Duplicate("orders")
	monitor.InProgress("elsewhere")
	monitor.Released("orders")
	monitor.StoreFailed("orders", "release", errors.New("gone"))
	for _, c := range []struct {
		collector prom.Collector
		want      float64
	}{
		{metrics.idempotency.WithLabelValues("orders", "claimed"), 2},
		{metrics.idempotency.WithLabelValues("orders", "duplicate"), 1},
		{metrics.idempotency.WithLabelValues(OtherStream, "in_progress"), 1},
		{metrics.idempotency.WithLabelValues("orders", "released"), 1},
		{metrics.idempotencyErrors.WithLabelValues("orders", "release"), 1},
	} {
		if got := testutil.ToFloat64(c.collector); got != c.want {
			t.Errorf("got %v, want %v", got, c.want)
		}
	}
}
