package prometheus

import (
	"errors"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/warrenmq/messaging/patterns/saga"
)

func TestClaimCheckSchemaAndSagaMonitorsCount(t *testing.T) {
	metrics, err := New(prom.NewRegistry(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	claims := metrics.ClaimCheck()
	claims.Inlined(10)
	claims.Inlined(20)
	claims.Offloaded(1 << 20)
	claims.Fetched(1 << 20)
	claims.Missing()
	claims.StoreFailed("get", errors.New("timeout"))
	schemas := metrics.Schema()
	schemas.Registered("order.placed", 1, true)
	schemas.Registered("order.placed", 1, false)
	schemas.Registered("order.placed", 1, false)
	schemas.NotFound("")
	sagas := metrics.Saga()
	sagas.Finished("place-order", saga.Completed)
	sagas.Finished("place-order", saga.Unresolved)
	sagas.UndoFailed("place-order", "take-payment", errors.New("down"))
	for _, c := range []struct {
		collector prom.Collector
		want      float64
	}{
		{metrics.claimCheck.WithLabelValues("inlined"), 2},
		{metrics.claimCheck.WithLabelValues("offloaded"), 1},
		{metrics.claimCheck.WithLabelValues("fetched"), 1},
		{metrics.claimCheck.WithLabelValues("missing"), 1},
		{metrics.claimCheckErrors.WithLabelValues("get"), 1},
		{metrics.schemaRegistered.WithLabelValues("order.placed", "created"), 1},
		{metrics.schemaRegistered.WithLabelValues("order.placed", "existing"), 2},
		{metrics.schemaNotFound.WithLabelValues(""), 1},
		{metrics.sagaRuns.WithLabelValues("place-order", "completed"), 1},
		{metrics.sagaRuns.WithLabelValues("place-order", "unresolved"), 1},
		{metrics.sagaUndoFailures.WithLabelValues("place-order", "take-payment"), 1},
	} {
		if got := testutil.ToFloat64(c.collector); got != c.want {
			t.Errorf("got %v, want %v", got, c.want)
		}
	}
}
