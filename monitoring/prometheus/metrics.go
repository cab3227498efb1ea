// Package prometheus implements every package's Monitor with Prometheus metrics
// named as the core seed's alerting tables name them, so a service wires metrics
// in one line per package:
//
//	metrics, err := prometheus.New(registry, "orders", "shipments")
//	transport := rabbitmq.New(rabbitmq.Options.Monitor(metrics.Transport()))
//	outbox, dispatcher := sqlmq.New(transport, sqlmq.Options.Monitor(metrics.Outbox()))
//	consumer := streaming.New(encoded, streaming.Options.Monitor(metrics.Streaming()))
//
// Per-stream metrics carry a stream label whose values are fixed at
// construction: the queue names given to New, plus "other" for any name not
// given, so a label never grows without bound. The core packages do not import
// Prometheus; only this package does.
package prometheus

import (
	"errors"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
)

// OtherStream is the stream label for queue names not passed to New.
const OtherStream = "other"

// Metrics holds every instrument and hands out the per-package monitors.
type Metrics struct {
	streams map[string]struct{}

	commits        *prom.CounterVec
	commitTimeouts prom.Counter
	rollbacks      *prom.CounterVec
	opens          *prom.CounterVec
	closes         prom.Counter
	blocked        prom.Gauge
	publishes      prom.Counter

	stored    prom.Counter
	published prom.Counter
	confirmed prom.Counter
	retired   prom.Counter
	lag       prom.Histogram
	inDoubt   *prom.CounterVec

	streamOpened   *prom.CounterVec
	streamClosed   *prom.CounterVec
	batchSeconds   *prom.HistogramVec
	acknowledged   *prom.CounterVec
	shutdownForced *prom.CounterVec
	settled        *prom.CounterVec

	handleAttempts *prom.CounterVec
	transactions   *prom.CounterVec
	encoded        *prom.CounterVec
	decoded        *prom.CounterVec

	idempotency       *prom.CounterVec
	idempotencyErrors *prom.CounterVec

	orderingWaits         *prom.CounterVec
	orderingWaitSeconds   *prom.HistogramVec
	orderingGaps          *prom.CounterVec
	handlerTimeouts       *prom.CounterVec
	handlerPanicsRejected *prom.CounterVec
	groupStarts           *prom.CounterVec
	groupMembersClosed    *prom.CounterVec

	replayMessages *prom.CounterVec
	replayPasses   *prom.CounterVec
	scheduleEvents *prom.CounterVec
	scheduleHops   *prom.CounterVec

	claimCheck       *prom.CounterVec
	claimCheckErrors *prom.CounterVec
	schemaRegistered *prom.CounterVec
	schemaNotFound   *prom.CounterVec
	sagaRuns         *prom.CounterVec
	sagaUndoFailures *prom.CounterVec

	streamRetryRefused *prom.CounterVec
	streamResumed      *prom.CounterVec

	requests       *prom.CounterVec
	requestSeconds *prom.HistogramVec
	repliesDropped *prom.CounterVec
	replies        *prom.CounterVec
	unanswerable   *prom.CounterVec

	flowHops           *prom.CounterVec
	flowFailed         *prom.CounterVec
	flowRefused        *prom.CounterVec
	pipelineRuns       *prom.CounterVec
	pipelineRunSeconds *prom.HistogramVec
}

// New registers the instruments with registerer (prom.DefaultRegisterer when nil)
// and returns them. streams are the queue names the streaming and settlement
// monitors label per stream.
func New(registerer prom.Registerer, streams ...string) (*Metrics, error) {
	if registerer == nil {
		registerer = prom.DefaultRegisterer
	}
	m := &Metrics{streams: map[string]struct{}{}}
	for _, s := range streams {
		m.streams[s] = struct{}{}
	}
	counter := func(name, help string) prom.Counter {
		return prom.NewCounter(prom.CounterOpts{Name: name, Help: help})
	}
	counterVec := func(name, help string, labels ...string) *prom.CounterVec {
		return prom.NewCounterVec(prom.CounterOpts{Name: name, Help: help}, labels)
	}

	m.commits = counterVec("amqp_commit_total", "Commit writer commits by result (success, failure, timeout).", "result")
	m.commitTimeouts = counter("amqp_commit_timeout_total", "Commits that did not complete within the broker timeout; the connection was severed.")
	m.rollbacks = counterVec("amqp_rollback_total", "Commit writer rollbacks by result.", "result")
	m.opens = counterVec("amqp_connection_open_total", "Broker connection attempts by result.", "result")
	m.closes = counter("amqp_connection_close_total", "Broker connections closed, by anyone.")
	m.blocked = prom.NewGauge(prom.GaugeOpts{Name: "amqp_connection_blocked", Help: "1 while the broker blocks a connection (memory or disk alarm)."})
	m.publishes = counter("amqp_publish_total", "Messages published to the broker.")

	m.stored = counter("outbox_stored_total", "Messages committed to the outbox table.")
	m.published = counter("outbox_published_total", "Outbox messages handed to the transport, retries included.")
	m.confirmed = counter("outbox_confirmed_total", "Outbox messages the broker confirmed and the relay marked dispatched.")
	m.retired = counter("outbox_retired_total", "Outbox messages retired after repeated refusals; they wait for an operator.")
	m.inDoubt = counterVec("outbox_commit_in_doubt_total", "Outbox COMMITs that lost their connection, by what a new connection found (stored, not_stored, unknown).", "outcome")
	m.lag = prom.NewHistogram(prom.HistogramOpts{Name: "outbox_dispatch_lag_seconds", Help: "Time from the outbox commit to the broker's confirmation.",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300}})

	m.streamOpened = counterVec("consumer_stream_opened_total", "Attempts to open a subscription's stream, by result.", "stream", "result")
	m.streamClosed = counterVec("consumer_stream_closed_total", "Live stream sessions that ended.", "stream")
	m.batchSeconds = prom.NewHistogramVec(prom.HistogramOpts{Name: "consumer_batch_seconds", Help: "Time a handler took for a batch, inner retries included.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"stream"})
	m.acknowledged = counterVec("consumer_acknowledged_total", "Deliveries acknowledged (result=success) or whose acknowledgement failed (result=failure; they will be redelivered).", "stream", "result")
	m.shutdownForced = counterVec("consumer_shutdown_forced_total", "Shutdowns that abandoned in-flight deliveries.", "stream")
	m.settled = counterVec("consumer_settled_total", "Settlement decisions by action (accepted, retried, dead_lettered, parked, in_progress, set_aside_failed).", "stream", "action")

	m.handleAttempts = counterVec("handler_attempts_total", "Handler attempts under the retry decorator, by result.", "result")
	m.transactions = counterVec("handler_transactions_total", "Handler transactions by event (started, committed, rolled_back) and result.", "event", "result")
	m.encoded = counterVec("serialization_encoded_total", "Messages encoded, by result.", "result")
	m.decoded = counterVec("serialization_decoded_total", "Messages decoded, by result.", "result")
	m.idempotency = counterVec("idempotency_total", "Idempotency guard outcomes per delivery (claimed, duplicate, in_progress, released).", "stream", "outcome")
	m.idempotencyErrors = counterVec("idempotency_store_errors_total", "Idempotency store calls that failed, by operation (claim, confirm, release).", "stream", "operation")
	m.orderingWaits = counterVec("ordering_waits_total", "Messages that waited behind an earlier message with the same ordering key.", "stream")
	m.orderingWaitSeconds = prom.NewHistogramVec(prom.HistogramOpts{Name: "ordering_wait_seconds", Help: "Time a message waited behind an earlier message with the same ordering key.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"stream"})
	m.orderingGaps = counterVec("ordering_gaps_skipped_total", "Messages that stopped waiting for earlier deliveries of their stream that never reached ordering (set aside or filtered before the handler, or later than the arrival window).", "stream")
	m.handlerTimeouts = counterVec("handler_timeouts_total", "Deliveries retried because their handler outlived middleware.Timeout.", "stream")
	m.handlerPanicsRejected = counterVec("handler_panics_rejected_total", "Deliveries middleware.Recovery dead-lettered because their handler panicked.", "stream")
	m.groupStarts = counterVec("group_started_total", "Consumer group starts, by result (success; failure: the started members were closed).", "stream", "result")
	m.groupMembersClosed = counterVec("group_members_closed_total", "Consumer group members stopped.", "stream")
	m.replayMessages = counterVec("replay_messages_total", "Messages a replay pass read, by verdict (moved, declined by the filter).", "stream", "verdict")
	m.replayPasses = counterVec("replay_passes_total", "Replay passes by the reason they stopped (drained, limit, deadline, cancelled, failed).", "stream", "reason")
	m.scheduleEvents = counterVec("schedule_events_total", "Scheduler events (scheduled, delivered, undelivered, rung_missing, set_aside).", "event")
	m.scheduleHops = counterVec("schedule_hops_total", "Scheduled messages put on a rung of the acemq.schedule ladder, by rung.", "rung")
	m.claimCheck = counterVec("claimcheck_total", "Claim-check codec events (inlined, offloaded, fetched, missing).", "event")
	m.claimCheckErrors = counterVec("claimcheck_store_errors_total", "Claim-check store calls that failed, by operation (put, get); a failed get is retried.", "operation")
	m.schemaRegistered = counterVec("schema_registered_total", "Schema registrations by subject and result (created, existing).", "subject", "result")
	m.schemaNotFound = counterVec("schema_not_found_total", "Schema lookups that found nothing, by subject (empty for a lookup by id).", "subject")
	m.sagaRuns = counterVec("saga_runs_total", "Saga runs by outcome (completed, compensated, unresolved).", "saga", "outcome")
	m.sagaUndoFailures = counterVec("saga_undo_failures_total", "Saga compensations that failed: effects left for a person to undo.", "saga", "step")
	m.streamRetryRefused = counterVec("stream_retry_refused_total", "Retry or InProgress asked on a stream and refused: the message was parked instead of appended again.", "stream")
	m.streamResumed = counterVec("stream_resumed_total", "Stream readers reattached after a dropped connection where they left off.", "stream")
	m.requests = counterVec("request_total", "Requests a requester made, by outcome (answered, timed_out, failed).", "routing_key", "outcome")
	m.requestSeconds = prom.NewHistogramVec(prom.HistogramOpts{Name: "request_seconds", Help: "Time from before a request's publish to Do's return, by outcome.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"routing_key", "outcome"})
	m.repliesDropped = counterVec("request_replies_dropped_total", "Replies that arrived after their caller gave up, or for no caller of this requester; acknowledged and dropped.", "routing_key")
	m.replies = counterVec("request_replies_total", "Replies a responder published (error replies included).", "stream")
	m.unanswerable = counterVec("request_unanswerable_total", "Requests a responder dead-lettered for carrying no reply address.", "stream")
	m.flowHops = counterVec("flow_hops_total", "Next messages a Then, slip or pipeline step published (result=success) or failed to (result=failure; the input is retried).", "pipeline", "step", "result")
	m.flowFailed = counterVec("flow_step_failures_total", "Flow steps that returned an error or panicked; the input is retried, or dead-lettered when fatal.", "pipeline", "step")
	m.flowRefused = counterVec("flow_refused_total", "Flow inputs set aside unhandled: no routing slip, an unreadable one, a declared route without AlongRoute, a body that does not decode.", "pipeline", "step")
	m.pipelineRuns = counterVec("pipeline_run_total", "Named runs that finished, by outcome (completed, ended_early) and the step they finished at.", "pipeline", "step", "outcome")
	m.pipelineRunSeconds = prom.NewHistogramVec(prom.HistogramOpts{Name: "pipeline_run_seconds", Help: "Age of a run when it finished: the time since its first message was first seen.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}}, []string{"pipeline", "outcome"})

	var errs []error
	for _, c := range []prom.Collector{
		m.commits, m.commitTimeouts, m.rollbacks, m.opens, m.closes, m.blocked, m.publishes,
		m.stored, m.published, m.confirmed, m.retired, m.lag, m.inDoubt,
		m.streamOpened, m.streamClosed, m.batchSeconds, m.acknowledged, m.shutdownForced, m.settled,
		m.handleAttempts, m.transactions, m.encoded, m.decoded,
		m.idempotency, m.idempotencyErrors,
		m.orderingWaits, m.orderingWaitSeconds, m.orderingGaps, m.handlerTimeouts, m.handlerPanicsRejected, m.groupStarts, m.groupMembersClosed,
		m.replayMessages, m.replayPasses, m.scheduleEvents, m.scheduleHops,
		m.claimCheck, m.claimCheckErrors, m.schemaRegistered, m.schemaNotFound, m.sagaRuns, m.sagaUndoFailures,
		m.streamRetryRefused, m.streamResumed,
		m.requests, m.requestSeconds, m.repliesDropped, m.replies, m.unanswerable,
		m.flowHops, m.flowFailed, m.flowRefused, m.pipelineRuns, m.pipelineRunSeconds,
	} {
		if err := registerer.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// stream maps a queue name onto a bounded label value.
func (m *Metrics) stream(name string) string {
	if _, ok := m.streams[name]; ok {
		return name
	}
	return OtherStream
}

func result(err error) string {
	if err != nil {
		return "failure"
	}
	return "success"
}

func seconds(d time.Duration) float64 { return d.Seconds() }
