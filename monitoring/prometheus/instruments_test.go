package prometheus

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
)

// recordingRegisterer keeps the description of every collector registered.
type recordingRegisterer struct{ descriptions []string }

func (r *recordingRegisterer) Register(c prom.Collector) error {
	descs := make(chan *prom.Desc, 8)
	go func() { c.Describe(descs); close(descs) }()
	for d := range descs {
		r.descriptions = append(r.descriptions, d.String())
	}
	return nil
}
func (r *recordingRegisterer) MustRegister(cs ...prom.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}
func (r *recordingRegisterer) Unregister(prom.Collector) bool { return false }

// TestEveryInstrumentIsRegisteredOnceWithItsNameLabelsAndHelp pins what New
// registers, so that the way the instruments are made can change without
// losing or renaming one.
func TestEveryInstrumentIsRegisteredOnceWithItsNameLabelsAndHelp(t *testing.T) {
	registerer := &recordingRegisterer{}
	if _, err := New(registerer); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(registerer.descriptions))
	if joined := strings.Join(got, "\n"); joined != registeredInstruments {
		t.Errorf("New registers:\n%s\nwant:\n%s", joined, registeredInstruments)
	}
}

// registeredInstruments is every instrument New registers, sorted.
const registeredInstruments = `Desc{fqName: "amqp_commit_timeout_total", help: "Commits that did not complete within the broker timeout; the connection was severed.", unit: "", constLabels: {}, variableLabels: {}}
Desc{fqName: "amqp_commit_total", help: "CommitWriter.Commit calls by result (success, failure, timeout); each publishes the buffered messages and waits for their confirms.", unit: "", constLabels: {}, variableLabels: {result}}
Desc{fqName: "amqp_connection_blocked", help: "1 while the broker blocks a connection (memory or disk alarm).", unit: "", constLabels: {}, variableLabels: {}}
Desc{fqName: "amqp_connection_close_total", help: "Broker connections closed, by anyone.", unit: "", constLabels: {}, variableLabels: {}}
Desc{fqName: "amqp_connection_open_total", help: "Broker connection attempts by result.", unit: "", constLabels: {}, variableLabels: {result}}
Desc{fqName: "amqp_publish_total", help: "Messages written to the broker, counted when sent, before their confirm.", unit: "", constLabels: {}, variableLabels: {}}
Desc{fqName: "amqp_rollback_total", help: "Commit writer rollbacks by result.", unit: "", constLabels: {}, variableLabels: {result}}
Desc{fqName: "claimcheck_store_errors_total", help: "Claim-check store calls that failed, by operation (put, get); a failed get is retried.", unit: "", constLabels: {}, variableLabels: {operation}}
Desc{fqName: "claimcheck_total", help: "Claim-check codec events (inlined, offloaded, fetched, missing).", unit: "", constLabels: {}, variableLabels: {event}}
Desc{fqName: "consumer_acknowledged_total", help: "Deliveries acknowledged (result=success) or whose acknowledgement failed (result=failure; they will be redelivered).", unit: "", constLabels: {}, variableLabels: {stream,result}}
Desc{fqName: "consumer_batch_seconds", help: "Time a handler took for a batch, inner retries included.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "consumer_requeued_total", help: "Deliveries the runtime returned to their queue alone because their settlement could not be completed; the rest of the batch was acknowledged.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "consumer_settled_total", help: "Settlement decisions per delivery by action (accepted, retried, dead_lettered, parked, in_progress, set_aside_failed, held_for_outage), and rung_missing beside the decision.", unit: "", constLabels: {}, variableLabels: {stream,action}}
Desc{fqName: "consumer_shutdown_forced_total", help: "Shutdowns that abandoned in-flight deliveries.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "consumer_stream_closed_total", help: "Live stream sessions that ended.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "consumer_stream_opened_total", help: "Attempts to open a subscription's stream, by result.", unit: "", constLabels: {}, variableLabels: {stream,result}}
Desc{fqName: "flow_hops_total", help: "Next messages a Then, slip or pipeline step published (result=success) or failed to (result=failure; the input is retried).", unit: "", constLabels: {}, variableLabels: {pipeline,step,result}}
Desc{fqName: "flow_refused_total", help: "Flow inputs set aside unhandled: no routing slip, an unreadable one, a declared route without AlongRoute, a body that does not decode.", unit: "", constLabels: {}, variableLabels: {pipeline,step}}
Desc{fqName: "flow_step_failures_total", help: "Flow steps that returned an error or panicked; the input is retried, or dead-lettered when fatal.", unit: "", constLabels: {}, variableLabels: {pipeline,step}}
Desc{fqName: "group_members_closed_total", help: "Consumer group members stopped.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "group_started_total", help: "Consumer group starts, by result (success; failure: the started members were closed).", unit: "", constLabels: {}, variableLabels: {stream,result}}
Desc{fqName: "handler_attempts_total", help: "Attempts to handle a batch under the retry decorator, by stream and result; a try during an outage is no attempt.", unit: "", constLabels: {}, variableLabels: {stream,result}}
Desc{fqName: "handler_panics_rejected_total", help: "Deliveries middleware.Recovery dead-lettered because their handler panicked.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "handler_timeouts_total", help: "Deliveries retried because their handler outlived middleware.Timeout.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "handler_transaction_events_total", help: "Events of a batch's transaction (started, committed, rolled_back), by result; a transaction has a started and a committed or rolled_back event.", unit: "", constLabels: {}, variableLabels: {event,result}}
Desc{fqName: "idempotency_store_errors_total", help: "Idempotency store calls that failed, by operation (claim, renew, confirm, release).", unit: "", constLabels: {}, variableLabels: {stream,operation}}
Desc{fqName: "idempotency_total", help: "Idempotency guard outcomes per delivery (claimed, duplicate, in_progress, released, claim_lost).", unit: "", constLabels: {}, variableLabels: {stream,outcome}}
Desc{fqName: "ordering_gaps_skipped_total", help: "Messages that stopped waiting for earlier deliveries of their stream that never reached ordering (set aside or filtered before the handler, or later than the arrival window).", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "ordering_wait_seconds", help: "Time a message waited behind an earlier message with the same ordering key.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "ordering_waits_total", help: "Messages that waited behind an earlier message with the same ordering key.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "outbox_commit_in_doubt_total", help: "Outbox COMMITs that lost their connection, by what a new connection found (stored, not_stored, unknown).", unit: "", constLabels: {}, variableLabels: {outcome}}
Desc{fqName: "outbox_confirmed_total", help: "Outbox messages the broker confirmed and the relay marked dispatched.", unit: "", constLabels: {}, variableLabels: {}}
Desc{fqName: "outbox_dispatch_lag_seconds", help: "Time from the outbox commit to the broker's confirmation.", unit: "", constLabels: {}, variableLabels: {}}
Desc{fqName: "outbox_published_total", help: "Outbox messages handed to the transport, retries included.", unit: "", constLabels: {}, variableLabels: {}}
Desc{fqName: "outbox_retired_total", help: "Outbox messages retired after repeated refusals; they wait for an operator.", unit: "", constLabels: {}, variableLabels: {}}
Desc{fqName: "outbox_stored_total", help: "Messages committed to the outbox table.", unit: "", constLabels: {}, variableLabels: {}}
Desc{fqName: "pipeline_run_seconds", help: "Age of a run when it finished: the time since its first message was first seen.", unit: "", constLabels: {}, variableLabels: {pipeline,outcome}}
Desc{fqName: "pipeline_run_total", help: "Named runs that finished, by outcome (completed, ended_early) and the step they finished at.", unit: "", constLabels: {}, variableLabels: {pipeline,step,outcome}}
Desc{fqName: "replay_messages_total", help: "Messages a replay pass read, by verdict (moved, declined by the filter).", unit: "", constLabels: {}, variableLabels: {stream,verdict}}
Desc{fqName: "replay_passes_total", help: "Replay passes by the reason they stopped (drained, limit, deadline, cancelled, failed).", unit: "", constLabels: {}, variableLabels: {stream,reason}}
Desc{fqName: "request_replies_dropped_total", help: "Replies that arrived after their caller gave up, for no caller of this requester, or with another request's causation id; acknowledged and dropped.", unit: "", constLabels: {}, variableLabels: {routing_key}}
Desc{fqName: "request_replies_total", help: "Replies a responder published (error replies included).", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "request_seconds", help: "Time from before a request's publish to Do's return, by outcome.", unit: "", constLabels: {}, variableLabels: {routing_key,outcome}}
Desc{fqName: "request_total", help: "Requests a requester made, by outcome (answered, timed_out, failed).", unit: "", constLabels: {}, variableLabels: {routing_key,outcome}}
Desc{fqName: "request_unanswerable_total", help: "Requests a responder dead-lettered for carrying no reply address.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "saga_runs_total", help: "Saga runs by outcome (completed, compensated, unresolved).", unit: "", constLabels: {}, variableLabels: {saga,outcome}}
Desc{fqName: "saga_undo_failures_total", help: "Saga compensations that failed: effects left for a person to undo.", unit: "", constLabels: {}, variableLabels: {saga,step}}
Desc{fqName: "schedule_events_total", help: "Scheduler events (scheduled, delivered, undelivered, rung_missing, set_aside).", unit: "", constLabels: {}, variableLabels: {event}}
Desc{fqName: "schedule_hops_total", help: "Scheduled messages put on a rung of the acemq.schedule ladder, by rung.", unit: "", constLabels: {}, variableLabels: {rung}}
Desc{fqName: "schema_not_found_total", help: "Schema lookups that found nothing, by subject (empty for a lookup by id).", unit: "", constLabels: {}, variableLabels: {subject}}
Desc{fqName: "schema_registered_total", help: "Schema registrations by subject and result (created, existing).", unit: "", constLabels: {}, variableLabels: {subject,result}}
Desc{fqName: "serialization_decoded_total", help: "Messages decoded, by codec (json, avro, encrypted, protobuf, other) and result.", unit: "", constLabels: {}, variableLabels: {codec,result}}
Desc{fqName: "serialization_encoded_total", help: "Messages encoded, by result.", unit: "", constLabels: {}, variableLabels: {result}}
Desc{fqName: "stream_resumed_total", help: "Stream readers reattached after a dropped connection where they left off.", unit: "", constLabels: {}, variableLabels: {stream}}
Desc{fqName: "stream_retry_refused_total", help: "Retry or InProgress asked on a stream and refused: the message was parked instead of appended again.", unit: "", constLabels: {}, variableLabels: {stream}}`

// TestTheMonitoringGuideListsEveryInstrument keeps doc/monitoring.md's tables
// and New in step: every instrument has a row, and every row an instrument.
func TestTheMonitoringGuideListsEveryInstrument(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join("..", "..", "doc", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(guide), "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok {
			if name, _, ok = strings.Cut(name, "` | "); ok && !strings.ContainsAny(name, " `") {
				documented[name] = true
			}
		}
	}
	registerer := &recordingRegisterer{}
	if _, err := New(registerer); err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, description := range registerer.descriptions {
		name := between(description, `fqName: "`, `"`)
		registered[name] = true
		if !documented[name] {
			t.Errorf("doc/monitoring.md has no row for %s", name)
		}
	}
	for name := range documented {
		if !registered[name] {
			t.Errorf("doc/monitoring.md has a row for %s, which New does not register", name)
		}
	}
}
