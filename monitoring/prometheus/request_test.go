package prometheus

import (
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/warrenmq/messaging/patterns/request"
)

func TestRequestMonitorCountsOutcomesRepliesAndDrops(t *testing.T) {
	metrics, err := New(prom.NewRegistry(), "prices")
	if err != nil {
		t.Fatal(err)
	}
	monitor := metrics.Request()
	monitor.RequestCompleted("prices", request.OutcomeAnswered, 2*time.Millisecond)
	monitor.RequestCompleted("prices", request.OutcomeAnswered, 3*time.Millisecond)
	monitor.RequestCompleted("prices", request.OutcomeTimedOut, 30*time.Second)
	monitor.RequestCompleted("unlisted", request.OutcomeFailed, time.Millisecond)
	monitor.ReplyDropped("prices")
	monitor.Answered("prices")
	monitor.Unanswerable("prices")
	for _, c := range []struct {
		collector prom.Collector
		want      float64
	}{
		{metrics.requests.WithLabelValues("prices", "answered"), 2},
		{metrics.requests.WithLabelValues("prices", "timed_out"), 1},
		{metrics.requests.WithLabelValues(OtherStream, "failed"), 1},
		{metrics.repliesDropped.WithLabelValues("prices"), 1},
		{metrics.replies.WithLabelValues("prices"), 1},
		{metrics.unanswerable.WithLabelValues("prices"), 1},
	} {
		if got := testutil.ToFloat64(c.collector); got != c.want {
			t.Errorf("got %v, want %v", got, c.want)
		}
	}
	if got := testutil.CollectAndCount(metrics.requestSeconds); got != 3 {
		t.Errorf("request_seconds has %d series; want 3", got)
	}
}
