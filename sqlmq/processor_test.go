package sqlmq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/sqldialect"
)

func TestProcessorFixture(t *testing.T) {
	gunit.Run(new(ProcessorFixture), t)
}

type ProcessorFixture struct {
	*gunit.Fixture
	db  *sql.DB
	dsn string
}

func (f *ProcessorFixture) Setup() {
	f.db, f.dsn = openSQLiteDSN(tb(f))
}

// seed stores ids as rows no instance holds, as if a dead instance left them.
func (f *ProcessorFixture) seed(ids ...string) {
	writer := newHarness(tb(f), f.db)
	f.So(writer.Commit(messages(ids...)...), should.BeNil)
	f.So(writer.processor.Close(), should.BeNil)
	_, err := f.db.Exec("UPDATE Messages SET lease_owner = NULL, lease_until_us = NULL")
	f.So(err, should.BeNil)
}

// refuse answers a write with a per-message account in which the messages
// named are unroutable and the others confirmed.
func refuse(dispatches []messaging.Dispatch, unroutable ...string) (int, error) {
	bad := map[string]bool{}
	for _, id := range unroutable {
		bad[id] = true
	}
	failure := &messaging.PublishError{}
	landed := 0
	for _, d := range dispatches {
		result := messaging.PublishResult{MessageID: d.MessageID, Confirmed: true, Routed: true}
		if bad[d.MessageID] {
			result.Routed, result.Err = false, fmt.Errorf("312 NO_ROUTE: %w", messaging.ErrUnroutable)
		} else {
			landed++
		}
		failure.Results = append(failure.Results, result)
	}
	if landed == len(dispatches) {
		return landed, nil
	}
	return landed, failure
}

func ids(dispatches []messaging.Dispatch) []string {
	out := make([]string, len(dispatches))
	for i, d := range dispatches {
		out[i] = d.MessageID
	}
	return out
}

func (f *ProcessorFixture) TestStartupRecoveryPublishesLeftoverRowsInPages() {
	f.seed("a", "b", "c", "d", "e")
	h := newHarness(tb(f), f.db, Options.PageSize(2))
	h.Listen()
	h.monitor.AwaitConfirmed(tb(f), 5)
	f.So(h.log.Await(tb(f), "Startup recovery"), should.Equal,
		"INFO Startup recovery found [5] undispatched message(s) in durable storage.")
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"a", "b"})
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"c", "d"})
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"e"})
}

func (f *ProcessorFixture) TestARowThatCannotBeReadBackIsRetiredAndTheRowsBehindItMove() {
	f.seed("bad", "good")
	_, err := f.db.Exec("UPDATE Messages SET headers = 'not json at all' WHERE message_id = 'bad'")
	f.So(err, should.BeNil)

	h := newHarness(tb(f), f.db)
	h.Listen()
	published := h.publisher.Next(tb(f))
	f.So(len(published), should.Equal, 1)
	f.So(published[0].MessageID, should.Equal, "good")
	var retired int
	var lastError string
	f.So(f.db.QueryRow("SELECT COUNT(*), MAX(last_error) FROM Messages WHERE retired_us IS NOT NULL AND message_id = 'bad'").Scan(&retired, &lastError), should.BeNil)
	f.So(retired, should.Equal, 1)
	f.So(lastError, should.ContainSubstring, "cannot be read back")
	h.log.Await(tb(f), "Retired message [1]: it cannot be read back")
}

func (f *ProcessorFixture) TestCloseReleasesTheLeasesOfRowsItDidNotPublish() {
	first := newHarness(tb(f), f.db)
	f.So(first.Commit(messages("a", "b")...), should.BeNil)
	f.So(f.leased(), should.Equal, 2) // leased to the committing instance at insert
	f.So(first.processor.Close(), should.BeNil)
	f.So(f.leased(), should.Equal, 0) // the next start takes them at once, not after the lease

	next := newHarness(tb(f), f.db)
	next.Listen()
	f.So(next.publisher.Next(tb(f)), should.HaveLength, 2)
}

func (f *ProcessorFixture) leased() int {
	var n int
	f.So(f.db.QueryRow("SELECT COUNT(*) FROM Messages WHERE lease_owner IS NOT NULL").Scan(&n), should.BeNil)
	return n
}

func (f *ProcessorFixture) TestCloseStopsTheStartupRead() {
	f.seed("a", "b", "c", "d", "e", "f")
	h := newHarness(tb(f), f.db, Options.PageSize(2))
	h.publisher.gate = make(chan struct{})
	h.Listen()
	h.publisher.Next(tb(f))
	f.So(h.processor.Close(), should.BeNil)
	h.AwaitStopped()
	f.So(h.publisher.Published(), should.Equal, []string{"a", "b"})
	f.So(h.count("dispatched_us IS NULL"), should.Equal, 6)
	f.So(h.publisher.closed, should.BeTrue)
}

func (f *ProcessorFixture) TestARowTheBrokerKeepsRefusingIsRetiredAndTheRowsBehindItMove() {
	h := newHarness(tb(f), f.db, Options.MaxAttempts(3))
	h.publisher.script = func(_ int, dispatches []messaging.Dispatch) (int, error) { return refuse(dispatches, "poison") }
	f.So(h.Commit(messages("poison", "a", "b")...), should.BeNil)
	h.Listen()
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"poison", "a", "b"})
	h.monitor.AwaitConfirmed(tb(f), 2) // a and b did not wait for poison
	f.So(h.log.Await(tb(f), "failed to publish"), should.StartWith, "WARN Message [1] failed to publish [312 NO_ROUTE: messaging: message reached no queue]; attempt [1] of [3] counted.")
	f.So(h.count("publish_attempts = 1 AND last_error LIKE '%NO_ROUTE%' AND lease_owner IS NULL"), should.Equal, 1)
	f.retryDue(h)
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"poison"})
	f.retryDue(h)
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"poison"})
	f.So(h.log.Await(tb(f), "Retired"), should.StartWith, "WARN Retired message [1] after [3] refused publish attempt(s) [")

	f.So(h.Commit(message("c")), should.BeNil)
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"c"})
	h.monitor.AwaitConfirmed(tb(f), 3)
	_, _, _, retired := h.monitor.counts()
	f.So(retired, should.Equal, 1)

	admin := NewAdmin(f.db, Options.Dialect(sqldialect.SQLite))
	stuck, err := admin.Retired(context.Background(), 10)
	f.So(err, should.BeNil)
	f.So(len(stuck), should.Equal, 1)
	f.So(stuck[0].MessageID, should.Equal, "poison")
	f.So(stuck[0].Attempts, should.Equal, 3)
	f.So(stuck[0].LastError, should.ContainSubstring, "NO_ROUTE")
	f.So(h.count("1=1"), should.Equal, 4) // kept, not deleted

	h.publisher.mu.Lock()
	h.publisher.script = nil
	h.publisher.mu.Unlock()
	released, err := admin.Release(context.Background(), stuck[0].ID)
	f.So(err, should.BeNil)
	f.So(released, should.Equal, 1)
	h.clock.AwaitFire(tb(f), testSweep)
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"poison"})
	h.monitor.AwaitConfirmed(tb(f), 4)
	stuck, _ = admin.Retired(context.Background(), 10)
	f.So(stuck, should.BeEmpty)
}

// retryDue lets RetryTimeout pass: rows set aside are due, and the sweep that
// takes them runs.
func (f *ProcessorFixture) retryDue(h *harness) {
	h.clock.Await(tb(f), testRetry)
	h.clock.Advance(testRetry)
	h.clock.Fire(testRetry)
}

// A missing exchange closes the channel: every row published with it fails.
// The batch is published again in halves at once, so the good rows land and
// the row at fault, published alone, is counted and, at MaxAttempts, retired.
func (f *ProcessorFixture) TestAMissingExchangeThatBreaksTheWholeBatchIsFoundAndRetired() {
	h := newHarness(tb(f), f.db, Options.MaxAttempts(2))
	h.publisher.script = func(_ int, dispatches []messaging.Dispatch) (int, error) {
		for _, d := range dispatches {
			if d.Topic == "deleted" {
				return 0, &messaging.BrokerError{Code: messaging.ReplyNotFound, Text: "NOT_FOUND - no exchange 'deleted' in vhost '/'"}
			}
		}
		return len(dispatches), nil
	}
	broken := message("x")
	broken.Topic = "deleted"
	f.So(h.Commit(append([]messaging.Dispatch{broken}, messages("a", "b")...)...), should.BeNil)
	h.Listen()
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"x", "a", "b"})
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"x", "a"})
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"x"})
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"a"})
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"b"})
	h.monitor.AwaitConfirmed(tb(f), 2)
	f.So(h.count("retired_us IS NULL AND publish_attempts = 1"), should.Equal, 1)
	f.retryDue(h)
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"x"})
	h.log.Await(tb(f), "Retired message [1] after [2] refused publish attempt(s)")
	f.So(h.count("retired_us IS NOT NULL AND publish_attempts = 2"), should.Equal, 1)
}

func (f *ProcessorFixture) TestAConnectionFailureIsNeverCountedAgainstARow() {
	h := newHarness(tb(f), f.db, Options.MaxAttempts(1))
	h.publisher.script = func(call int, dispatches []messaging.Dispatch) (int, error) {
		if call < 3 {
			return 0, errors.New("dial tcp 127.0.0.1:5672: connection refused")
		}
		return len(dispatches), nil
	}
	f.So(h.Commit(messages("a", "b")...), should.BeNil)
	h.Listen()
	for range 3 {
		h.publisher.Next(tb(f))
		h.clock.AwaitFire(tb(f), testRetry)
	}
	h.monitor.AwaitConfirmed(tb(f), 2)
	f.So(h.count("retired_us IS NULL AND publish_attempts = 0 AND dispatched_us IS NOT NULL"), should.Equal, 2)
}

func (f *ProcessorFixture) TestBatchesKeepCommitOrderAcrossRetries() {
	h := newHarness(tb(f), f.db, Options.PageSize(2))
	h.publisher.script = func(call int, dispatches []messaging.Dispatch) (int, error) {
		if call == 0 {
			return 0, errors.New("connection reset by peer")
		}
		if call == 2 { // c confirmed, d's confirm lost with the channel
			return 1, &messaging.PublishError{Results: []messaging.PublishResult{
				{MessageID: "c", Confirmed: true, Routed: true},
				{MessageID: "d", Err: messaging.ErrArrivalUnknown},
			}}
		}
		return len(dispatches), nil
	}
	f.So(h.Commit(messages("a", "b", "c")...), should.BeNil)
	f.So(h.Commit(messages("d", "e")...), should.BeNil)
	h.Listen()
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"a", "b"})
	h.clock.AwaitFire(tb(f), testRetry) // a broker failure before publishing: waited out
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"a", "b"})
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"c", "d"})
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"d"}) // at once
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"e"})
	h.monitor.AwaitConfirmed(tb(f), 5)
	f.So(h.count("publish_attempts = 0"), should.Equal, 5)
}

func (f *ProcessorFixture) TestRowsAnotherInstanceMarkedFirstAreReported() {
	h := newHarness(tb(f), f.db)
	h.publisher.gate = make(chan struct{})
	f.So(h.Commit(messages("a", "b")...), should.BeNil)
	h.Listen()
	h.publisher.Next(tb(f))
	_, err := f.db.Exec("UPDATE Messages SET dispatched_us = 1 WHERE message_id = 'a'")
	f.So(err, should.BeNil)
	close(h.publisher.gate)
	f.So(h.log.Await(tb(f), "Confirmed ["), should.StartWith, "WARN Confirmed [1] of [2] published message(s) in durable storage. ")
	h.monitor.AwaitConfirmed(tb(f), 1)
}

func (f *ProcessorFixture) TestTheSweepPublishesRowsWhoseLeaseExpiredAndLeavesHeldOnesAlone() {
	h := newHarness(tb(f), f.db)
	h.Listen()
	h.log.Await(tb(f), "Startup recovery found [0]")
	f.seed("dead", "alive")
	now := micros(h.clock.Now())
	_, err := f.db.Exec("UPDATE Messages SET lease_owner = 'gone', lease_until_us = ? WHERE message_id = 'dead'", now-1)
	f.So(err, should.BeNil)
	_, err = f.db.Exec("UPDATE Messages SET lease_owner = 'other', lease_until_us = ? WHERE message_id = 'alive'", now+int64(time.Minute/time.Microsecond))
	f.So(err, should.BeNil)

	h.clock.AwaitFire(tb(f), testSweep)
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"dead"})
	h.monitor.AwaitConfirmed(tb(f), 1)
	h.clock.Advance(2 * time.Minute)
	h.clock.AwaitFire(tb(f), testSweep)
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"alive"})
	h.monitor.AwaitConfirmed(tb(f), 2)
}

func (f *ProcessorFixture) TestARowInTheChannelIsNotPublishedTwiceWhenItsLeaseExpires() {
	h := newHarness(tb(f), f.db)
	f.So(h.Commit(message("a")), should.BeNil)
	h.clock.Advance(2 * testLease)
	h.Listen()
	h.monitor.AwaitConfirmed(tb(f), 1)
	f.So(h.processor.Close(), should.BeNil)
	h.AwaitStopped()
	f.So(h.publisher.Published(), should.Equal, []string{"a"})
}

func (f *ProcessorFixture) TestARowAnotherInstanceTookIsDroppedFromTheChannel() {
	first := newHarness(tb(f), f.db, Options.InstanceName("first"))
	f.So(first.Commit(message("a")), should.BeNil)
	second := newHarness(tb(f), f.db, Options.InstanceName("second"))
	second.clock.Advance(2 * testLease)
	second.Listen()
	second.monitor.AwaitConfirmed(tb(f), 1)

	first.clock.Advance(2 * testLease) // the same time passed for the first instance
	first.Listen()
	f.So(first.Commit(message("b")), should.BeNil)
	first.monitor.AwaitConfirmed(tb(f), 1)
	f.So(second.publisher.Published(), should.Equal, []string{"a"})
	f.So(first.publisher.Published(), should.Equal, []string{"b"})
}

func (f *ProcessorFixture) TestDispatchedRowsArePrunedAfterRetentionInBatches() {
	f.seed("held")
	_, _ = f.db.Exec("UPDATE Messages SET lease_owner = 'other', lease_until_us = ?", int64(1)<<60)
	h := newHarness(tb(f), f.db, Options.Retention(time.Hour), Options.PruneBatchSize(2))
	h.Listen()
	f.So(h.Commit(messages("a", "b", "c")...), should.BeNil)
	h.monitor.AwaitConfirmed(tb(f), 3)
	h.clock.Advance(2 * time.Hour)
	h.clock.AwaitFire(tb(f), testPrune)
	h.clock.Await(tb(f), testPrune) // re-armed after the second, partial batch
	f.So(h.count("dispatched_us IS NOT NULL"), should.Equal, 0)
	f.So(h.count("message_id = 'held'"), should.Equal, 1)
}

func (f *ProcessorFixture) TestARecoveredRowPublishesExactlyWhatTheLivePathDid() {
	live := newHarness(tb(f), f.db)
	live.Listen()
	f.So(live.Commit(fullDispatch()), should.BeNil)
	published := live.publisher.Next(tb(f))[0]
	live.monitor.AwaitConfirmed(tb(f), 1)
	f.So(live.processor.Close(), should.BeNil)

	_, err := f.db.Exec("UPDATE Messages SET dispatched_us = NULL, lease_owner = NULL, lease_until_us = NULL")
	f.So(err, should.BeNil)
	recovered := newHarness(tb(f), f.db)
	recovered.Listen()
	republished := recovered.publisher.Next(tb(f))[0]
	f.So(republished, should.Resemble, published)
	f.So(published.Headers["count"], should.Equal, int32(7))
	f.So(published.Headers["plain"], should.Resemble, amqp.Table{"k": uint16(9)})
	f.So(published.Expiration, should.Equal, 1500*time.Millisecond)
}

func fullDispatch() messaging.Dispatch {
	return messaging.Dispatch{
		Topic: "orders", RoutingKey: "eu.placed", CorrelationID: "corr", CausationID: "cause", ReplyTo: "replies",
		MessageType: "order-placed", Version: 3, ContentType: "application/json", ContentEncoding: "gzip",
		Attempt: 2, FirstSeen: time.Date(2026, 1, 2, 3, 4, 5, 678912345, time.FixedZone("x", 3600)), Origin: "orders@host",
		Error: "earlier failure", Claim: "claim-key", Route: []string{"validate", "charge"}, RoutePosition: 1, RouteID: "run-1",
		Expiration: 1500*time.Millisecond + 300*time.Microsecond, Transient: true,
		Headers: map[string]any{
			"count": int32(7), "big": int64(1) << 62, "ratio": 0.25, "flag": true, "name": "x", "raw": []byte{0, 1},
			"nested": amqp.Table{"inner": int16(-3)}, "list": []any{"a", int8(1), nil}, "plain": map[string]any{"k": uint16(9)},
			"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		},
		Payload: []byte(`{"id":1}`),
	}
}

func (f *ProcessorFixture) TestAProcessorStoppedBetweenPublishAndMarkPublishesAgainAndLosesNothing() {
	handle, err := sql.Open("sqlite", f.dsn)
	f.So(err, should.BeNil)
	first := newHarness(tb(f), handle)
	first.publisher.script = func(_ int, dispatches []messaging.Dispatch) (int, error) {
		_ = handle.Close() // the database goes away after the broker confirmed
		return len(dispatches), nil
	}
	f.So(first.Commit(messages("a", "b")...), should.BeNil)
	first.Listen()
	f.So(first.log.Await(tb(f), "Unable to mark"), should.StartWith, "WARN Unable to mark [2] confirmed message(s) dispatched in durable storage [")
	f.So(first.processor.Close(), should.BeNil)
	first.AwaitStopped()

	second := newHarness(tb(f), f.db)
	second.clock.Advance(2 * testLease) // the first instance's lease has expired
	second.Listen()
	second.monitor.AwaitConfirmed(tb(f), 2)
	f.So(first.publisher.Published(), should.Equal, []string{"a", "b"})
	f.So(second.publisher.Published(), should.Equal, []string{"a", "b"})
	f.So(second.count("dispatched_us IS NOT NULL"), should.Equal, 2)
}
