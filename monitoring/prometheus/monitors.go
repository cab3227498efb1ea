package prometheus

import (
	"errors"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

// Transport returns the rabbitmq.Monitor.
func (m *Metrics) Transport() rabbitmq.Monitor { return transportMonitor{m} }

// Outbox returns the sqlmq.Monitor.
func (m *Metrics) Outbox() sqlmq.Monitor { return outboxMonitor{m} }

// Streaming returns the streaming.Monitor.
func (m *Metrics) Streaming() streaming.Monitor { return streamingMonitor{m} }

// Settlement returns the deadletter.Monitor.
func (m *Metrics) Settlement() deadletter.Monitor { return settlementMonitor{m} }

// Retry returns the retry.Monitor; it is a retry.StreamMonitor, so
// handler_attempts_total is labelled by the stream of each batch.
func (m *Metrics) Retry() retry.Monitor { return retryMonitor{m} }

// Transactional returns the transactional.Monitor (also fits sqltx).
func (m *Metrics) Transactional() transactional.Monitor { return transactionMonitor{m} }

type transportMonitor struct{ m *Metrics }

func (t transportMonitor) ConnectionOpened(err error) { t.m.opens.WithLabelValues(result(err)).Inc() }
func (t transportMonitor) ConnectionClosed()          { t.m.closes.Inc() }
func (t transportMonitor) ConnectionBlocked(string)   { t.m.blocked.Set(1) }
func (t transportMonitor) ConnectionUnblocked()       { t.m.blocked.Set(0) }
func (t transportMonitor) DispatchPublished()         { t.m.publishes.Inc() }
func (t transportMonitor) TransactionCommitted(err error) {
	switch {
	case err == nil:
		t.m.commits.WithLabelValues("success").Inc()
	case errors.Is(err, messaging.ErrCommitTimeout):
		t.m.commits.WithLabelValues("timeout").Inc()
		t.m.commitTimeouts.Inc()
	default:
		t.m.commits.WithLabelValues("failure").Inc()
	}
}
func (t transportMonitor) TransactionRolledBack(err error) {
	t.m.rollbacks.WithLabelValues(result(err)).Inc()
}

type outboxMonitor struct{ m *Metrics }

func (o outboxMonitor) MessageStored(count int)       { o.m.stored.Add(float64(count)) }
func (o outboxMonitor) MessagePublished(count int)    { o.m.published.Add(float64(count)) }
func (o outboxMonitor) MessageConfirmed(count int)    { o.m.confirmed.Add(float64(count)) }
func (o outboxMonitor) MessageRetired(count int)      { o.m.retired.Add(float64(count)) }
func (o outboxMonitor) DispatchLag(lag time.Duration) { o.m.lag.Observe(seconds(lag)) }
func (o outboxMonitor) CommitInDoubt(stored bool, err error) {
	outcome := map[bool]string{true: "stored", false: "not_stored"}[stored]
	if err != nil {
		outcome = "unknown"
	}
	o.m.inDoubt.WithLabelValues(outcome).Inc()
}

type streamingMonitor struct{ m *Metrics }

func (s streamingMonitor) StreamOpened(stream string, err error) {
	s.m.streamOpened.WithLabelValues(s.m.stream(stream), result(err)).Inc()
}
func (s streamingMonitor) StreamClosed(stream string) {
	s.m.streamClosed.WithLabelValues(s.m.stream(stream)).Inc()
}
func (s streamingMonitor) BatchHandled(stream string, _ int, duration time.Duration) {
	s.m.batchSeconds.WithLabelValues(s.m.stream(stream)).Observe(seconds(duration))
}
func (s streamingMonitor) BatchAcknowledged(stream string, count int, err error) {
	s.m.acknowledged.WithLabelValues(s.m.stream(stream), result(err)).Add(float64(count))
}
func (s streamingMonitor) ShutdownForced(stream string) {
	s.m.shutdownForced.WithLabelValues(s.m.stream(stream)).Inc()
}

// OutageStarted and OutageEnded record nothing yet; streaming.Consumer.Waiting
// reports outage waits.
func (s streamingMonitor) OutageStarted(string, error)       {}
func (s streamingMonitor) OutageEnded(string, time.Duration) {}

func (s streamingMonitor) DeliveriesRequeued(stream string, count int) {
	s.m.requeued.WithLabelValues(s.m.stream(stream)).Add(float64(count))
}

type settlementMonitor struct{ m *Metrics }

func (s settlementMonitor) Settled(queue, action, _ string) {
	s.m.settled.WithLabelValues(s.m.stream(queue), action).Inc()
}

// retryMonitor is a retry.StreamMonitor: the retry decorator tells it the
// stream of each attempt's batch.
type retryMonitor struct{ m *Metrics }

var _ retry.StreamMonitor = retryMonitor{}

// HandleAttempted counts an attempt whose stream is not known as stream
// "other"; the retry decorator reports through HandleAttemptedOn.
func (r retryMonitor) HandleAttempted(attempt int, value any) {
	r.HandleAttemptedOn(OtherStream, attempt, value)
}

func (r retryMonitor) HandleAttemptedOn(stream string, _ int, value any) {
	outcome := "failure"
	if value == nil {
		outcome = "success"
	}
	r.m.handleAttempts.WithLabelValues(r.m.stream(stream), outcome).Inc()
}

// OutageStarted records nothing: streaming.Consumer.Waiting reports the
// subscriptions that wait on an outage.
func (retryMonitor) OutageStarted(error) {}

// OutageEnded records nothing; see OutageStarted.
func (retryMonitor) OutageEnded(time.Duration) {}

type transactionMonitor struct{ m *Metrics }

func (t transactionMonitor) TransactionStarted(err error) {
	t.m.transactions.WithLabelValues("started", result(err)).Inc()
}
func (t transactionMonitor) TransactionCommitted(err error) {
	t.m.transactions.WithLabelValues("committed", result(err)).Inc()
}
func (t transactionMonitor) TransactionRolledBack(err error) {
	t.m.transactions.WithLabelValues("rolled_back", result(err)).Inc()
}
