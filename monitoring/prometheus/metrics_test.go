package prometheus

import (
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
	joined := strings.Join(names, " ")
	for _, want := range []string{"amqp_publish_total", "consumer_stream_opened_total", "consumer_batch_seconds",
		"consumer_settled_total", "handler_attempts_total", "handler_transactions_total", "serialization_decoded_total"} {
		f.So(joined, should.ContainSubstring, want)
	}
}
