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
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/sqldialect"
)

func TestProcessorFixture(t *testing.T) {
	gunit.Run(new(ProcessorFixture), t)
}

type ProcessorFixture struct {
	*gunit.Fixture
	t   *testing.T // the bubble's
	db  *sql.DB
	dsn string
}

// run runs test in a bubble over a fresh SQLite database.
func (f *ProcessorFixture) run(test func()) {
	inBubble(f, func(t *testing.T) {
		f.t = t
		f.db, f.dsn = openSQLiteDSN(t)
		test()
	})
}

// seed stores ids as rows no instance holds, as if a dead instance left them.
func (f *ProcessorFixture) seed(ids ...string) {
	writer := newHarness(f.t, f.db)
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
	f.run(func() {
		f.seed("a", "b", "c", "d", "e")
		h := newHarness(f.t, f.db, Options.PageSize(2))
		h.Listen()
		h.monitor.AwaitConfirmed(f.t, 5)
		f.So(h.log.Await(f.t, "Startup recovery"), should.Equal,
			"INFO Startup recovery found [5] undispatched message(s) in durable storage.")
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"a", "b"})
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"c", "d"})
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"e"})
	})
}

func (f *ProcessorFixture) TestARowThatCannotBeReadBackIsRetiredAndTheRowsBehindItMove() {
	f.run(func() {
		f.seed("bad", "good")
		_, err := f.db.Exec("UPDATE Messages SET headers = 'not json at all' WHERE message_id = 'bad'")
		f.So(err, should.BeNil)

		h := newHarness(f.t, f.db)
		h.Listen()
		published := h.publisher.Next(f.t)
		f.So(len(published), should.Equal, 1)
		f.So(published[0].MessageID, should.Equal, "good")
		var retired int
		var lastError string
		f.So(f.db.QueryRow("SELECT COUNT(*), MAX(last_error) FROM Messages WHERE retired_us IS NOT NULL AND message_id = 'bad'").Scan(&retired, &lastError), should.BeNil)
		f.So(retired, should.Equal, 1)
		f.So(lastError, should.ContainSubstring, "cannot be read back")
		h.log.Await(f.t, "Retired message [1]: it cannot be read back")
	})
}

func (f *ProcessorFixture) TestCloseReleasesTheLeasesOfRowsItDidNotPublish() {
	f.run(func() {
		first := newHarness(f.t, f.db)
		f.So(first.Commit(messages("a", "b")...), should.BeNil)
		f.So(f.leased(), should.Equal, 2) // leased to the committing instance at insert
		f.So(first.processor.Close(), should.BeNil)
		f.So(f.leased(), should.Equal, 0) // the next start takes them at once, not after the lease

		next := newHarness(f.t, f.db)
		next.Listen()
		f.So(next.publisher.Next(f.t), should.HaveLength, 2)
	})
}

func (f *ProcessorFixture) leased() int {
	var n int
	f.So(f.db.QueryRow("SELECT COUNT(*) FROM Messages WHERE lease_owner IS NOT NULL").Scan(&n), should.BeNil)
	return n
}

func (f *ProcessorFixture) TestCloseStopsTheStartupRead() {
	f.run(func() {
		f.seed("a", "b", "c", "d", "e", "f")
		h := newHarness(f.t, f.db, Options.PageSize(2))
		h.publisher.gate = make(chan struct{})
		h.Listen()
		h.publisher.Next(f.t)
		f.So(h.processor.Close(), should.BeNil)
		h.AwaitStopped()
		f.So(h.publisher.Published(), should.Equal, []string{"a", "b"})
		f.So(h.count("dispatched_us IS NULL"), should.Equal, 6)
		f.So(h.publisher.closed, should.BeTrue)
	})
}

// A row the broker keeps refusing is counted each time, tried again after
// its policy's delay while the rows behind it move on, and retired when the
// policy gives up: kept, listed, and released by an operator.
func (f *ProcessorFixture) TestARowTheBrokerKeepsRefusingIsRetiredAndTheRowsBehindItMove() {
	f.run(func() {
		h := newHarness(f.t, f.db, Options.RetryPolicy(retrypolicy.Fixed(3, testRetry)))
		h.publisher.script = func(_ int, dispatches []messaging.Dispatch) (int, error) { return refuse(dispatches, "poison") }
		f.So(h.Commit(messages("poison", "a", "b")...), should.BeNil)
		h.Listen()
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"poison", "a", "b"})
		h.monitor.AwaitConfirmed(f.t, 2) // a and b did not wait for poison
		f.So(h.log.Await(f.t, "failed to publish"), should.StartWith, "WARN Message [1] failed to publish [312 NO_ROUTE: messaging: message reached no queue]; attempt [1] of [3] counted.")
		f.So(h.count("publish_attempts = 1 AND last_error LIKE '%NO_ROUTE%' AND lease_owner IS NULL"), should.Equal, 1)
		refused := time.Now()
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"poison"})
		f.So(time.Since(refused), should.Equal, testRetry)
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"poison"})
		f.So(h.log.Await(f.t, "Retired"), should.Equal, "WARN Retired message [1] after [3] failed publish attempt(s): "+
			`no queue is bound to exchange "events" for routing key "", and the outbox publishes mandatory. It stays in the outbox table: `+
			`bind the queue that should receive it (or, if messages to "events" may reach no queue, name it in sqlmq.Options.DropUnroutable), `+
			"then release it with `warrenmq outbox release -table Messages 1` (or sqlmq.Admin.Release).")

		f.So(h.Commit(message("c")), should.BeNil)
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"c"})
		h.monitor.AwaitConfirmed(f.t, 3)
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
		elapse(testSweep) // the next sweep takes the released row
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"poison"})
		h.monitor.AwaitConfirmed(f.t, 4)
		stuck, _ = admin.Retired(context.Background(), 10)
		f.So(stuck, should.BeEmpty)
	})
}

// A missing exchange closes the channel: every row published with it fails.
// The batch is published again in halves at once, so the good rows land and
// the row at fault, published alone, is counted and, when its policy gives
// up, retired.
func (f *ProcessorFixture) TestAMissingExchangeThatBreaksTheWholeBatchIsFoundAndRetired() {
	f.run(func() {
		h := newHarness(f.t, f.db, Options.RetryPolicy(retrypolicy.Fixed(2, testRetry)))
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
		start := time.Now()
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"x", "a", "b"})
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"x", "a"})
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"x"})
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"a"})
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"b"})
		f.So(time.Since(start), should.Equal, time.Duration(0)) // the halves go at once
		h.monitor.AwaitConfirmed(f.t, 2)
		f.So(h.count("retired_us IS NULL AND publish_attempts = 1"), should.Equal, 1)
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"x"})
		f.So(h.log.Await(f.t, "Retired message [1]"), should.StartWith, "WARN Retired message [1] after [2] failed publish attempt(s): "+
			`exchange "deleted" does not exist. It stays in the outbox table: declare the exchange, then release it with `+"`warrenmq outbox release -table Messages 1`")
		f.So(h.count("retired_us IS NOT NULL AND publish_attempts = 2"), should.Equal, 1)
	})
}

func (f *ProcessorFixture) TestAConnectionFailureIsNeverCountedAgainstARow() {
	f.run(func() {
		h := newHarness(f.t, f.db, Options.RetryPolicy(retrypolicy.None()))
		h.publisher.script = func(call int, dispatches []messaging.Dispatch) (int, error) {
			if call < 3 {
				return 0, errors.New("dial tcp 127.0.0.1:5672: connection refused")
			}
			return len(dispatches), nil
		}
		f.So(h.Commit(messages("a", "b")...), should.BeNil)
		h.Listen()
		h.publisher.Next(f.t)
		for range 3 {
			failed := time.Now()
			h.publisher.Next(f.t)
			f.So(time.Since(failed), should.Equal, testRetry) // waited out, RetryDelay at a time
		}
		h.monitor.AwaitConfirmed(f.t, 2)
		f.So(h.count("retired_us IS NULL AND publish_attempts = 0 AND dispatched_us IS NOT NULL"), should.Equal, 2)
	})
}

func (f *ProcessorFixture) TestBatchesKeepCommitOrderAcrossRetries() {
	f.run(func() {
		h := newHarness(f.t, f.db, Options.PageSize(2))
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
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"a", "b"})
		failed := time.Now()
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"a", "b"})
		f.So(time.Since(failed), should.Equal, testRetry) // a broker failure before publishing: waited out
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"c", "d"})
		lost := time.Now()
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"d"})
		f.So(time.Since(lost), should.Equal, time.Duration(0)) // at once
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"e"})
		h.monitor.AwaitConfirmed(f.t, 5)
		f.So(h.count("publish_attempts = 0"), should.Equal, 5)
	})
}

func (f *ProcessorFixture) TestRowsAnotherInstanceMarkedFirstAreReported() {
	f.run(func() {
		h := newHarness(f.t, f.db)
		h.publisher.gate = make(chan struct{})
		f.So(h.Commit(messages("a", "b")...), should.BeNil)
		h.Listen()
		h.publisher.Next(f.t)
		_, err := f.db.Exec("UPDATE Messages SET dispatched_us = 1 WHERE message_id = 'a'")
		f.So(err, should.BeNil)
		close(h.publisher.gate)
		f.So(h.log.Await(f.t, "Confirmed ["), should.StartWith, "WARN Confirmed [1] of [2] published message(s) in durable storage. ")
		h.monitor.AwaitConfirmed(f.t, 1)
	})
}

func (f *ProcessorFixture) TestTheSweepPublishesRowsWhoseLeaseExpiredAndLeavesHeldOnesAlone() {
	f.run(func() {
		h := newHarness(f.t, f.db)
		h.Listen()
		h.log.Await(f.t, "Startup recovery found [0]")
		listening := time.Now()
		f.seed("dead", "alive")
		now := micros(time.Now())
		_, err := f.db.Exec("UPDATE Messages SET lease_owner = 'gone', lease_until_us = ? WHERE message_id = 'dead'", now-1)
		f.So(err, should.BeNil)
		_, err = f.db.Exec("UPDATE Messages SET lease_owner = 'other', lease_until_us = ? WHERE message_id = 'alive'", now+int64(testSweep*3/2/time.Microsecond))
		f.So(err, should.BeNil)

		elapse(testSweep) // the first sweep is due
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"dead"})
		f.So(time.Since(listening), should.Equal, testSweep)
		h.monitor.AwaitConfirmed(f.t, 1)
		elapse(testSweep) // the second sweep, past the other instance's lease
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"alive"})
		h.monitor.AwaitConfirmed(f.t, 2)
	})
}

func (f *ProcessorFixture) TestARowInTheChannelIsNotPublishedTwiceWhenItsLeaseExpires() {
	f.run(func() {
		h := newHarness(f.t, f.db)
		f.So(h.Commit(message("a")), should.BeNil)
		elapse(2 * testLease) // the commit's lease runs out
		h.Listen()
		h.monitor.AwaitConfirmed(f.t, 1)
		f.So(h.processor.Close(), should.BeNil)
		h.AwaitStopped()
		f.So(h.publisher.Published(), should.Equal, []string{"a"})
	})
}

func (f *ProcessorFixture) TestARowAnotherInstanceTookIsDroppedFromTheChannel() {
	f.run(func() {
		first := newHarness(f.t, f.db, Options.InstanceName("first"))
		f.So(first.Commit(message("a")), should.BeNil)
		elapse(2 * testLease) // the first instance's lease runs out
		second := newHarness(f.t, f.db, Options.InstanceName("second"))
		second.Listen()
		second.monitor.AwaitConfirmed(f.t, 1)

		first.Listen()
		f.So(first.Commit(message("b")), should.BeNil)
		first.monitor.AwaitConfirmed(f.t, 1)
		f.So(second.publisher.Published(), should.Equal, []string{"a"})
		f.So(first.publisher.Published(), should.Equal, []string{"b"})
	})
}

func (f *ProcessorFixture) TestDispatchedRowsArePrunedAfterRetentionInBatches() {
	f.run(func() {
		f.seed("held")
		_, _ = f.db.Exec("UPDATE Messages SET lease_owner = 'other', lease_until_us = ?", int64(1)<<60)
		h := newHarness(f.t, f.db, Options.Retention(time.Hour), Options.PruneBatchSize(2))
		h.Listen()
		f.So(h.Commit(messages("a", "b", "c")...), should.BeNil)
		h.monitor.AwaitConfirmed(f.t, 3)
		elapse(testPrune) // past the retention, the prune is due
		h.awaitCount("dispatched_us IS NOT NULL", 0)
		f.So(h.count("message_id = 'held'"), should.Equal, 1)
	})
}

func (f *ProcessorFixture) TestARecoveredRowPublishesExactlyWhatTheLivePathDid() {
	f.run(func() {
		live := newHarness(f.t, f.db)
		live.Listen()
		f.So(live.Commit(fullDispatch()), should.BeNil)
		published := live.publisher.Next(f.t)[0]
		live.monitor.AwaitConfirmed(f.t, 1)
		f.So(live.processor.Close(), should.BeNil)

		_, err := f.db.Exec("UPDATE Messages SET dispatched_us = NULL, lease_owner = NULL, lease_until_us = NULL")
		f.So(err, should.BeNil)
		recovered := newHarness(f.t, f.db)
		recovered.Listen()
		republished := recovered.publisher.Next(f.t)[0]
		f.So(republished, should.Resemble, published)
		f.So(published.Headers["count"], should.Equal, int32(7))
		f.So(published.Headers["plain"], should.Resemble, amqp.Table{"k": uint16(9)})
		f.So(published.Expiration, should.Equal, 1500*time.Millisecond)
	})
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
	f.run(func() {
		handle, err := sql.Open("sqlite", f.dsn)
		f.So(err, should.BeNil)
		first := newHarness(f.t, handle)
		first.publisher.script = func(_ int, dispatches []messaging.Dispatch) (int, error) {
			_ = handle.Close() // the database goes away after the broker confirmed
			return len(dispatches), nil
		}
		f.So(first.Commit(messages("a", "b")...), should.BeNil)
		first.Listen()
		f.So(first.log.Await(f.t, "Unable to mark"), should.StartWith, "WARN Unable to mark [2] confirmed message(s) dispatched in durable storage [")
		f.So(first.processor.Close(), should.BeNil)
		first.AwaitStopped()

		elapse(2 * testLease) // the first instance's lease expires
		second := newHarness(f.t, f.db)
		second.Listen()
		second.monitor.AwaitConfirmed(f.t, 2)
		f.So(first.publisher.Published(), should.Equal, []string{"a", "b"})
		f.So(second.publisher.Published(), should.Equal, []string{"a", "b"})
		f.So(second.count("dispatched_us IS NOT NULL"), should.Equal, 2)
	})
}
