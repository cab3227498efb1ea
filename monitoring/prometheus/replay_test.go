package prometheus

import (
	"errors"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/warrenmq/messaging/patterns/replay"
)

func TestReplayAndScheduleMonitorsCount(t *testing.T) {
	metrics, err := New(prom.NewRegistry(), "orders.dlq")
	if err != nil {
		t.Fatal(err)
	}
	r := metrics.Replay()
	r.Moved("orders.dlq")
	r.Moved("orders.dlq")
	r.Declined("elsewhere.dlq")
	r.Finished("orders.dlq", replay.Result{Moved: 2, Reason: replay.Limit})
	s := metrics.Schedule()
	s.Scheduled()
	s.Hopped("acemq.schedule.1m")
	s.Hopped("acemq.schedule.1m")
	s.Delivered()
	s.Undelivered("billing", "invoice.due")
	s.RungMissing("acemq.schedule.1h")
	s.SetAside(errors.New("no rung"))
	for _, c := range []struct {
		collector prom.Collector
		want      float64
	}{
		{metrics.replayMessages.WithLabelValues("orders.dlq", "moved"), 2},
		{metrics.replayMessages.WithLabelValues(OtherStream, "declined"), 1},
		{metrics.replayPasses.WithLabelValues("orders.dlq", "limit"), 1},
		{metrics.scheduleEvents.WithLabelValues("scheduled"), 1},
		{metrics.scheduleEvents.WithLabelValues("delivered"), 1},
		{metrics.scheduleEvents.WithLabelValues("undelivered"), 1},
		{metrics.scheduleEvents.WithLabelValues("rung_missing"), 1},
		{metrics.scheduleEvents.WithLabelValues("set_aside"), 1},
		{metrics.scheduleHops.WithLabelValues("acemq.schedule.1m"), 2},
	} {
		if got := testutil.ToFloat64(c.collector); got != c.want {
			t.Errorf("got %v, want %v", got, c.want)
		}
	}
}
