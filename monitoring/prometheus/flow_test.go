package prometheus

import (
	"errors"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/warrenmq/messaging/patterns/flow"
)

func TestFlowMonitorCountsHopsFailuresRefusalsAndRuns(t *testing.T) {
	metrics, err := New(prom.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	monitor := metrics.Flow()
	monitor.Forwarded("fulfilment", "validate")
	monitor.Forwarded("fulfilment", "validate")
	monitor.ForwardFailed("fulfilment", "reserve", errors.New("unroutable"))
	monitor.StepFailed("fulfilment", "reserve", errors.New("later"))
	monitor.Refused("", "charge", errors.New("no slip"))
	monitor.RunFinished(flow.RunFinished{Pipeline: "fulfilment", Step: "dispatch", Outcome: flow.OutcomeCompleted, Age: 2 * time.Second})
	monitor.RunFinished(flow.RunFinished{Pipeline: "fulfilment", Step: "validate", Outcome: flow.OutcomeEndedEarly, Age: time.Second})
	for _, c := range []struct {
		collector prom.Collector
		want      float64
	}{
		{metrics.flowHops.WithLabelValues("fulfilment", "validate", "success"), 2},
		{metrics.flowHops.WithLabelValues("fulfilment", "reserve", "failure"), 1},
		{metrics.flowFailed.WithLabelValues("fulfilment", "reserve"), 1},
		{metrics.flowRefused.WithLabelValues("", "charge"), 1},
		{metrics.pipelineRuns.WithLabelValues("fulfilment", "dispatch", "completed"), 1},
		{metrics.pipelineRuns.WithLabelValues("fulfilment", "validate", "ended_early"), 1},
	} {
		if got := testutil.ToFloat64(c.collector); got != c.want {
			t.Errorf("got %v, want %v", got, c.want)
		}
	}
	if got := testutil.CollectAndCount(metrics.pipelineRunSeconds); got != 2 {
		t.Errorf("%d run duration series, want 2", got)
	}
}
