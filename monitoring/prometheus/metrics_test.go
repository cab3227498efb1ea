package prometheus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
)

func TestMetricsFixture(t *testing.T) {
	gunit.Run(new(MetricsFixture), t)
}

type MetricsFixture struct {
	*gunit.Fixture
	registry *prom.Registry
	metrics  *Metrics
}

func (f *MetricsFixture) Setup() {
	f.registry = prom.NewRegistry()
	var err error
	f.metrics, err = New(f.registry, "orders")
	f.So(err, should.BeNil)
}

func (f *MetricsFixture) TestRegisteringTwiceIsAnError() {
	_, err := New(f.registry)
	f.So(err, should.NotBeNil)
}

func (f *MetricsFixture) TestCommitsAreCountedByResultWithTimeoutsSeparate() {
	t := f.metrics.Transport()
	t.TransactionCommitted(nil)
	t.TransactionCommitted(fmt.Errorf("commit: %w", messaging.ErrCommitTimeout))
	t.TransactionCommitted(errors.New("refused"))
	f.So(testutil.ToFloat64(f.metrics.commits.WithLabelValues("success")), should.Equal, 1)
	f.So(testutil.ToFloat64(f.metrics.commits.WithLabelValues("timeout")), should.Equal, 1)
	f.So(testutil.ToFloat64(f.metrics.commits.WithLabelValues("failure")), should.Equal, 1)
	f.So(testutil.ToFloat64(f.metrics.commitTimeouts), should.Equal, 1)
}

func (f *MetricsFixture) TestBlockedGaugeFollowsTheBroker() {
	t := f.metrics.Transport()
	t.ConnectionBlocked("low on memory")
	f.So(testutil.ToFloat64(f.metrics.blocked), should.Equal, 1)
	t.ConnectionUnblocked()
	f.So(testutil.ToFloat64(f.metrics.blocked), should.Equal, 0)
}

func (f *MetricsFixture) TestOutboxCountersGiveTheStoredMinusConfirmedGap() {
	o := f.metrics.Outbox()
	o.MessageStored(5)
	o.MessagePublished(5)
	o.MessageConfirmed(3)
	o.DispatchLag(20 * time.Millisecond)
	gap := testutil.ToFloat64(f.metrics.stored) - testutil.ToFloat64(f.metrics.confirmed)
	f.So(gap, should.Equal, 2)
	f.So(testutil.CollectAndCount(f.metrics.lag), should.Equal, 1)
}

func (f *MetricsFixture) TestStreamLabelsAreBounded() {
	s := f.metrics.Streaming()
	s.BatchAcknowledged("orders", 10, nil)
	s.BatchAcknowledged("some-queue-made-up-at-runtime", 4, nil)
	s.BatchAcknowledged("another-one", 1, errors.New("channel closed"))
	f.So(testutil.ToFloat64(f.metrics.acknowledged.WithLabelValues("orders", "success")), should.Equal, 10)
	f.So(testutil.ToFloat64(f.metrics.acknowledged.WithLabelValues(OtherStream, "success")), should.Equal, 4)
	f.So(testutil.ToFloat64(f.metrics.acknowledged.WithLabelValues(OtherStream, "failure")), should.Equal, 1)
	f.So(testutil.CollectAndCount(f.metrics.acknowledged), should.Equal, 3)
}

func (f *MetricsFixture) TestExpositionUsesTheNamesOfTheOperatingGuide() {
	f.metrics.Transport().DispatchPublished()
	f.metrics.Streaming().StreamOpened("orders", nil)
	f.metrics.Streaming().BatchHandled("orders", 3, time.Millisecond)
	f.metrics.Settlement().Settled("orders", "dead_lettered", "exhausted 3 attempts: boom")
	f.metrics.Retry().HandleAttempted(1, "boom")
	f.metrics.Transactional().TransactionCommitted(nil)
	f.metrics.Serialization().MessageDecoded(nil)
	families, err := f.registry.Gather()
	f.So(err, should.BeNil)
	var names []string
	for _, family := range families {
		names = append(names, family.GetName())
	}
	for _, want := range []string{"amqp_publish_total", "consumer_stream_opened_total", "consumer_batch_seconds",
		"consumer_settled_total", "handler_attempts_total", "handler_transaction_events_total", "serialization_decoded_total"} {
		f.So(names, should.Contain, want)
	}
}

// TestTheOperatingGuidesNamesAndLabelsAreKept pins the metrics smarty/messaging
// v4's operating guide names: a dashboard built from the guide keeps working.
func (f *MetricsFixture) TestTheOperatingGuidesNamesAndLabelsAreKept() {
	registerer := &recordingRegisterer{}
	_, err := New(registerer)
	f.So(err, should.BeNil)
	registered := map[string]string{}
	for _, description := range registerer.descriptions {
		name := between(description, `fqName: "`, `"`)
		registered[name] = between(description, "variableLabels: {", "}")
	}
	for name, labels := range map[string]string{
		"amqp_commit_total": "result", "amqp_commit_timeout_total": "", "amqp_rollback_total": "result",
		"amqp_connection_open_total": "result", "amqp_connection_close_total": "", "amqp_connection_blocked": "",
		"amqp_publish_total": "", "outbox_stored_total": "", "outbox_published_total": "", "outbox_confirmed_total": "",
		"consumer_stream_opened_total": "stream,result", "consumer_stream_closed_total": "stream",
		"consumer_batch_seconds": "stream", "consumer_acknowledged_total": "stream,result",
		"consumer_shutdown_forced_total": "stream",
	} {
		got, ok := registered[name]
		f.So(ok, should.BeTrue)
		f.So(got, should.Equal, labels)
	}
}

func (f *MetricsFixture) TestHandlerAttemptsAreLabelledByTheStreamOfTheirBatch() {
	handler := retry.New(messaging.HandlerFunc(func(context.Context, ...any) {}), retry.Options.Monitor(f.metrics.Retry()))
	ctx := messaging.WithDeliveries(context.Background(), []messaging.Delivery{{SourceQueue: "orders"}})
	handler.Handle(ctx, "one")
	handler.Handle(context.Background(), "two") // no deliveries: no stream known
	f.metrics.Retry().HandleAttempted(1, "boom")

	f.So(testutil.ToFloat64(f.metrics.handleAttempts.WithLabelValues("orders", "success")), should.Equal, 1)
	f.So(testutil.ToFloat64(f.metrics.handleAttempts.WithLabelValues(OtherStream, "success")), should.Equal, 1)
	f.So(testutil.ToFloat64(f.metrics.handleAttempts.WithLabelValues(OtherStream, "failure")), should.Equal, 1)
	f.So(testutil.CollectAndCount(f.metrics.handleAttempts), should.Equal, 3)
}

func (f *MetricsFixture) TestRequeuedDeliveriesAreCountedPerStream() {
	s := f.metrics.Streaming()
	s.DeliveriesRequeued("orders", 2)
	s.DeliveriesRequeued("orders", 1)
	s.DeliveriesRequeued("made-up", 4)

	f.So(testutil.ToFloat64(f.metrics.requeued.WithLabelValues("orders")), should.Equal, 3)
	f.So(testutil.ToFloat64(f.metrics.requeued.WithLabelValues(OtherStream)), should.Equal, 4)
}

// between is the text of s after the first start and before the next end.
func between(s, start, end string) string {
	_, after, _ := strings.Cut(s, start)
	before, _, _ := strings.Cut(after, end)
	return before
}
