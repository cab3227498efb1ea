// Package prometheus implements every package's Monitor with Prometheus metrics
// named as smarty/messaging v4's operating guide names them, so a service wires metrics
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
	requeued       *prom.CounterVec
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
	i := &instruments{}
	m.transportInstruments(i)
	m.outboxInstruments(i)
	m.consumerInstruments(i)
	m.handlerInstruments(i)
	m.consumerPatternInstruments(i)
	m.payloadPatternInstruments(i)
	m.requestInstruments(i)
	m.flowInstruments(i)
	if err := i.register(registerer); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) transportInstruments(i *instruments) {
	m.commits = i.counterVec("amqp_commit_total", "CommitWriter.Commit calls by result (success, failure, timeout); each publishes the buffered messages and waits for their confirms.", "result")
	m.commitTimeouts = i.counter("amqp_commit_timeout_total", "Commits that did not complete within the broker timeout; the connection was severed.")
	m.rollbacks = i.counterVec("amqp_rollback_total", "Commit writer rollbacks by result.", "result")
	m.opens = i.counterVec("amqp_connection_open_total", "Broker connection attempts by result.", "result")
	m.closes = i.counter("amqp_connection_close_total", "Broker connections closed, by anyone.")
	m.blocked = i.gauge("amqp_connection_blocked", "1 while the broker blocks a connection (memory or disk alarm).")
	m.publishes = i.counter("amqp_publish_total", "Messages written to the broker, counted when sent, before their confirm.")
}

func (m *Metrics) outboxInstruments(i *instruments) {
	m.stored = i.counter("outbox_stored_total", "Messages committed to the outbox table.")
	m.published = i.counter("outbox_published_total", "Outbox messages handed to the transport, retries included.")
	m.confirmed = i.counter("outbox_confirmed_total", "Outbox messages the broker confirmed and the relay marked dispatched.")
	m.retired = i.counter("outbox_retired_total", "Outbox messages retired after repeated refusals; they wait for an operator.")
	m.inDoubt = i.counterVec("outbox_commit_in_doubt_total", "Outbox COMMITs that lost their connection, by what a new connection found (stored, not_stored, unknown).", "outcome")
	m.lag = i.histogram("outbox_dispatch_lag_seconds", "Time from the outbox commit to the broker's confirmation.",
		[]float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300})
}

// handlingBuckets are the buckets of the time a handler takes, or waits.
var handlingBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

func (m *Metrics) consumerInstruments(i *instruments) {
	m.streamOpened = i.counterVec("consumer_stream_opened_total", "Attempts to open a subscription's stream, by result.", "stream", "result")
	m.streamClosed = i.counterVec("consumer_stream_closed_total", "Live stream sessions that ended.", "stream")
	m.batchSeconds = i.histogramVec("consumer_batch_seconds", "Time a handler took for a batch, inner retries included.", handlingBuckets, "stream")
	m.acknowledged = i.counterVec("consumer_acknowledged_total", "Deliveries acknowledged (result=success) or whose acknowledgement failed (result=failure; they will be redelivered).", "stream", "result")
	m.shutdownForced = i.counterVec("consumer_shutdown_forced_total", "Shutdowns that abandoned in-flight deliveries.", "stream")
	m.requeued = i.counterVec("consumer_requeued_total", "Deliveries the runtime returned to their queue alone because their settlement could not be completed; the rest of the batch was acknowledged.", "stream")
	m.settled = i.counterVec("consumer_settled_total", "Settlement decisions per delivery by action (accepted, retried, dead_lettered, parked, in_progress, set_aside_failed, held_for_outage), and rung_missing beside the decision.", "stream", "action")
}

func (m *Metrics) handlerInstruments(i *instruments) {
	m.handleAttempts = i.counterVec("handler_attempts_total", "Attempts to handle a batch under the retry decorator, by stream and result; a try during an outage is no attempt.", "stream", "result")
	m.transactions = i.counterVec("handler_transaction_events_total", "Events of a batch's transaction (started, committed, rolled_back), by result; a transaction has a started and a committed or rolled_back event.", "event", "result")
	m.encoded = i.counterVec("serialization_encoded_total", "Messages encoded, by result.", "result")
	m.decoded = i.counterVec("serialization_decoded_total", "Messages decoded, by codec (json, avro, encrypted, protobuf, other) and result.", "codec", "result")
}

// consumerPatternInstruments are those of the patterns around a consumer's
// handler: idempotency, ordering, middleware, group, replay, schedule, streams.
func (m *Metrics) consumerPatternInstruments(i *instruments) {
	m.idempotency = i.counterVec("idempotency_total", "Idempotency guard outcomes per delivery (claimed, duplicate, in_progress, released, claim_lost).", "stream", "outcome")
	m.idempotencyErrors = i.counterVec("idempotency_store_errors_total", "Idempotency store calls that failed, by operation (claim, renew, confirm, release).", "stream", "operation")
	m.orderingWaits = i.counterVec("ordering_waits_total", "Messages that waited behind an earlier message with the same ordering key.", "stream")
	m.orderingWaitSeconds = i.histogramVec("ordering_wait_seconds", "Time a message waited behind an earlier message with the same ordering key.", handlingBuckets, "stream")
	m.orderingGaps = i.counterVec("ordering_gaps_skipped_total", "Messages that stopped waiting for earlier deliveries of their stream that never reached ordering (set aside or filtered before the handler, or later than the arrival window).", "stream")
	m.handlerTimeouts = i.counterVec("handler_timeouts_total", "Deliveries retried because their handler outlived middleware.Timeout.", "stream")
	m.handlerPanicsRejected = i.counterVec("handler_panics_rejected_total", "Deliveries middleware.Recovery dead-lettered because their handler panicked.", "stream")
	m.groupStarts = i.counterVec("group_started_total", "Consumer group starts, by result (success; failure: the started members were closed).", "stream", "result")
	m.groupMembersClosed = i.counterVec("group_members_closed_total", "Consumer group members stopped.", "stream")
	m.replayMessages = i.counterVec("replay_messages_total", "Messages a replay pass read, by verdict (moved, declined by the filter).", "stream", "verdict")
	m.replayPasses = i.counterVec("replay_passes_total", "Replay passes by the reason they stopped (drained, limit, deadline, cancelled, failed).", "stream", "reason")
	m.scheduleEvents = i.counterVec("schedule_events_total", "Scheduler events (scheduled, delivered, undelivered, rung_missing, set_aside).", "event")
	m.scheduleHops = i.counterVec("schedule_hops_total", "Scheduled messages put on a rung of the acemq.schedule ladder, by rung.", "rung")
	m.streamRetryRefused = i.counterVec("stream_retry_refused_total", "Retry or InProgress asked on a stream and refused: the message was parked instead of appended again.", "stream")
	m.streamResumed = i.counterVec("stream_resumed_total", "Stream readers reattached after a dropped connection where they left off.", "stream")
}

// payloadPatternInstruments are those of the patterns around what a message
// holds: claim check, schema, saga.
func (m *Metrics) payloadPatternInstruments(i *instruments) {
	m.claimCheck = i.counterVec("claimcheck_total", "Claim-check codec events (inlined, offloaded, fetched, missing).", "event")
	m.claimCheckErrors = i.counterVec("claimcheck_store_errors_total", "Claim-check store calls that failed, by operation (put, get); a failed get is retried.", "operation")
	m.schemaRegistered = i.counterVec("schema_registered_total", "Schema registrations by subject and result (created, existing).", "subject", "result")
	m.schemaNotFound = i.counterVec("schema_not_found_total", "Schema lookups that found nothing, by subject (empty for a lookup by id).", "subject")
	m.sagaRuns = i.counterVec("saga_runs_total", "Saga runs by outcome (completed, compensated, unresolved).", "saga", "outcome")
	m.sagaUndoFailures = i.counterVec("saga_undo_failures_total", "Saga compensations that failed: effects left for a person to undo.", "saga", "step")
}

func (m *Metrics) requestInstruments(i *instruments) {
	m.requests = i.counterVec("request_total", "Requests a requester made, by outcome (answered, timed_out, failed).", "routing_key", "outcome")
	m.requestSeconds = i.histogramVec("request_seconds", "Time from before a request's publish to Do's return, by outcome.",
		[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}, "routing_key", "outcome")
	m.repliesDropped = i.counterVec("request_replies_dropped_total", "Replies that arrived after their caller gave up, for no caller of this requester, or with another request's causation id; acknowledged and dropped.", "routing_key")
	m.replies = i.counterVec("request_replies_total", "Replies a responder published (error replies included).", "stream")
	m.unanswerable = i.counterVec("request_unanswerable_total", "Requests a responder dead-lettered for carrying no reply address.", "stream")
}

func (m *Metrics) flowInstruments(i *instruments) {
	m.flowHops = i.counterVec("flow_hops_total", "Next messages a Then, slip or pipeline step published (result=success) or failed to (result=failure; the input is retried).", "pipeline", "step", "result")
	m.flowFailed = i.counterVec("flow_step_failures_total", "Flow steps that returned an error or panicked; the input is retried, or dead-lettered when fatal.", "pipeline", "step")
	m.flowRefused = i.counterVec("flow_refused_total", "Flow inputs set aside unhandled: no routing slip, an unreadable one, a declared route without AlongRoute, a body that does not decode.", "pipeline", "step")
	m.pipelineRuns = i.counterVec("pipeline_run_total", "Named runs that finished, by outcome (completed, ended_early) and the step they finished at.", "pipeline", "step", "outcome")
	m.pipelineRunSeconds = i.histogramVec("pipeline_run_seconds", "Age of a run when it finished: the time since its first message was first seen.",
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}, "pipeline", "outcome")
}

// instruments makes New's instruments and keeps each one for registering.
type instruments struct{ collectors []prom.Collector }

func keep[C prom.Collector](i *instruments, c C) C {
	i.collectors = append(i.collectors, c)
	return c
}

func (i *instruments) counter(name, help string) prom.Counter {
	return keep(i, prom.NewCounter(prom.CounterOpts{Name: name, Help: help}))
}

func (i *instruments) counterVec(name, help string, labels ...string) *prom.CounterVec {
	return keep(i, prom.NewCounterVec(prom.CounterOpts{Name: name, Help: help}, labels))
}

func (i *instruments) gauge(name, help string) prom.Gauge {
	return keep(i, prom.NewGauge(prom.GaugeOpts{Name: name, Help: help}))
}

func (i *instruments) histogram(name, help string, buckets []float64) prom.Histogram {
	return keep(i, prom.NewHistogram(prom.HistogramOpts{Name: name, Help: help, Buckets: buckets}))
}

func (i *instruments) histogramVec(name, help string, buckets []float64, labels ...string) *prom.HistogramVec {
	return keep(i, prom.NewHistogramVec(prom.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels))
}

// register registers every instrument made, and returns every refusal.
func (i *instruments) register(registerer prom.Registerer) error {
	var errs []error
	for _, c := range i.collectors {
		if err := registerer.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
