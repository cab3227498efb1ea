package prometheus

import (
	"errors"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestOrderingMiddlewareAndGroupMonitorsCount(t *testing.T) {
	metrics, err := New(prom.NewRegistry(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	ordering := metrics.Ordering()
	ordering.Waited("orders", 2*time.Second)
	ordering.Waited("orders", time.Second)
	ordering.GapSkipped("elsewhere")
	middleware := metrics.Middleware()
	middleware.TimedOut("orders")
	middleware.Recovered("orders")
	middleware.Recovered("orders")
	group := metrics.Group()
	group.Started("orders", 4)
	group.StartFailed("orders", errors.New("refused"))
	group.MemberClosed("orders")
	for _, c := range []struct {
		name      string
		collector prom.Collector
		want      float64
	}{
		{"ordering waits", metrics.orderingWaits.WithLabelValues("orders"), 2},
		{"ordering gaps", metrics.orderingGaps.WithLabelValues(OtherStream), 1},
		{"timeouts", metrics.handlerTimeouts.WithLabelValues("orders"), 1},
		{"panics rejected", metrics.handlerPanicsRejected.WithLabelValues("orders"), 2},
		{"group started", metrics.groupStarts.WithLabelValues("orders", "success"), 1},
		{"group failed", metrics.groupStarts.WithLabelValues("orders", "failure"), 1},
		{"members closed", metrics.groupMembersClosed.WithLabelValues("orders"), 1},
	} {
		if got := testutil.ToFloat64(c.collector); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(metrics.orderingWaitSeconds, "ordering_wait_seconds"); n != 1 {
		t.Errorf("ordering_wait_seconds has %d series; want 1", n)
	}
}
