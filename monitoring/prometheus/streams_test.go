package prometheus

import (
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestStreamsMonitorCountsRefusalsAndResumptions(t *testing.T) {
	metrics, err := New(prom.NewRegistry(), "orders.log")
	if err != nil {
		t.Fatal(err)
	}
	monitor := metrics.Streams()
	monitor.RetryRefused("orders.log")
	monitor.RetryRefused("orders.log")
	monitor.RetryRefused("elsewhere")
	monitor.Resumed("orders.log", 41337)
	for _, c := range []struct {
		collector prom.Collector
		want      float64
	}{
		{metrics.streamRetryRefused.WithLabelValues("orders.log"), 2},
		{metrics.streamRetryRefused.WithLabelValues(OtherStream), 1},
		{metrics.streamResumed.WithLabelValues("orders.log"), 1},
	} {
		if got := testutil.ToFloat64(c.collector); got != c.want {
			t.Errorf("got %v, want %v", got, c.want)
		}
	}
}
