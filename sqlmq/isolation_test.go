package sqlmq

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

// The relay's defence against a row that stalls the outbox: attempt counting,
// isolation of the row at fault, and outages that count nothing.
func TestIsolationFixture(t *testing.T) {
	gunit.Run(new(IsolationFixture), t)
}

type IsolationFixture struct {
	*gunit.Fixture
}

// killsConnection answers like the transport when a message in the write made
// the broker (or the client) close the connection: nothing of the write is
// confirmed, every message's arrival is unknown.
func killsConnection(dispatches []messaging.Dispatch) (int, error) {
	closed := &messaging.BrokerError{Code: 320, Text: "CONNECTION_FORCED - closed"}
	failure := &messaging.PublishError{}
	for _, d := range dispatches {
		failure.Results = append(failure.Results, messaging.PublishResult{MessageID: d.MessageID,
			Err: fmt.Errorf("message %s: the channel closed before the broker confirmed it (%w): %w", d.MessageID, closed, messaging.ErrArrivalUnknown)})
	}
	return 0, failure
}

func refusedDial() error {
	return fmt.Errorf("batch writer: connect: %w", &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}})
}

func anyBad(dispatches []messaging.Dispatch) bool {
	for _, d := range dispatches {
		if strings.HasPrefix(d.MessageID, "bad") {
			return true
		}
	}
	return false
}

func goodIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("good-%02d", i)
	}
	return out
}

// Three rows published while the connection is dropped under them, ahead of
// twenty good ones: the good ones publish in the same round, without waiting
// a RetryDelay, and the three are set aside and tried again. A connection lost
// under a publish is an outage, never a verdict on the message: nothing is
// counted against them, however often it happens, and once the connection
// holds they publish.
func (f *IsolationFixture) TestTwentyGoodRowsBehindThreeThatLoseTheConnectionPublishAtOnce() {
	inBubble(f, func(t *testing.T) {
		h := newHarness(t, openSQLite(t))
		dropping := true
		h.publisher.script = func(_ int, dispatches []messaging.Dispatch) (int, error) {
			h.publisher.mu.Lock()
			drop := dropping
			h.publisher.mu.Unlock()
			if drop && anyBad(dispatches) {
				return killsConnection(dispatches)
			}
			return len(dispatches), nil
		}
		good := goodIDs(20)
		f.So(h.Commit(messages(append([]string{"bad-1", "bad-2", "bad-3"}, good...)...)...), should.BeNil)
		h.Listen()
		h.monitor.AwaitConfirmed(t, 20) // no retry timer was fired
		f.So(h.count("dispatched_us IS NOT NULL"), should.Equal, 20)
		h.awaitCount("message_id LIKE 'bad%' AND publish_attempts = 0 AND last_error LIKE '%CONNECTION_FORCED%' AND lease_owner IS NULL", 3)
		published := 0
		for _, id := range h.publisher.Published() {
			if strings.HasPrefix(id, "good") {
				published++
			}
		}
		f.So(published, should.BeLessThan, 3*20) // halving, not one row at a time over and over

		// Tried again after RetryDelay, the connection drops again: still not
		// counted. The gap is measured between the two log lines, not from
		// here: waiting for the rows above may have moved the clock on.
		const alone = "was lost while message [3] was published alone"
		h.log.AwaitN(t, alone, 2)
		if times := h.log.Times(alone); f.So(len(times), should.BeGreaterThanOrEqualTo, 2) {
			f.So(times[1].Sub(times[0]), should.Equal, testRetry)
		}
		f.So(h.count("message_id LIKE 'bad%' AND publish_attempts = 0"), should.Equal, 3)

		h.publisher.mu.Lock()
		dropping = false
		h.publisher.mu.Unlock()
		h.monitor.AwaitConfirmed(t, 23)
		f.So(h.count("publish_attempts = 0 AND dispatched_us IS NOT NULL"), should.Equal, 23)
	})
}

// When every row fails alone and nothing publishes, it may be the broker:
// nothing is counted, and when the broker then turns out to be unreachable the
// pending suspicions are dropped.
func (f *IsolationFixture) TestAnOutageCountsNoAttempt() {
	inBubble(f, func(t *testing.T) {
		h := newHarness(t, openSQLite(t), Options.RetryPolicy(retrypolicy.None()))
		down := true
		h.publisher.script = func(call int, dispatches []messaging.Dispatch) (int, error) {
			switch {
			case call < 5: // the connection is dropped under each publish: a broker going down
				return killsConnection(dispatches)
			case down:
				return 0, refusedDial()
			}
			return len(dispatches), nil
		}
		f.So(h.Commit(messages("a", "b", "c")...), should.BeNil)
		h.Listen()
		h.log.Await(t, "was lost while message [3] was published alone")
		f.So(h.count("publish_attempts = 0 AND retired_us IS NULL"), should.Equal, 3)

		// RetryDelay later they are taken again: the dial is refused.
		f.So(h.log.Await(t, "Unable to publish [3]"), should.StartWith, "WARN Unable to publish [3] message(s) to the transport [")
		h.publisher.mu.Lock()
		down = false
		h.publisher.mu.Unlock()
		h.monitor.AwaitConfirmed(t, 3)
		f.So(h.count("publish_attempts = 0 AND retired_us IS NULL AND dispatched_us IS NOT NULL"), should.Equal, 3)
		_, _, _, retired := h.monitor.counts()
		f.So(retired, should.Equal, 0)
	})
}

// A memory alarm pauses publishing: the rows wait in order on the same
// publisher, nothing is counted, nothing is set aside.
func (f *IsolationFixture) TestPausedPublishingIsWaitedOutInOrder() {
	inBubble(f, func(t *testing.T) {
		h := newHarness(t, openSQLite(t), Options.RetryPolicy(retrypolicy.None()))
		h.publisher.script = func(call int, dispatches []messaging.Dispatch) (int, error) {
			if call < 3 {
				return 0, &messaging.PublishError{Results: []messaging.PublishResult{{MessageID: dispatches[0].MessageID,
					Err: fmt.Errorf("the broker has blocked this connection (reason: low on memory): %w", messaging.ErrPublishingPaused)}}}
			}
			return len(dispatches), nil
		}
		f.So(h.Commit(messages("a", "b")...), should.BeNil)
		h.Listen()
		f.So(ids(h.publisher.Next(t)), should.Equal, []string{"a", "b"})
		for range 3 {
			paused := time.Now()
			f.So(ids(h.publisher.Next(t)), should.Equal, []string{"a", "b"})
			f.So(time.Since(paused), should.Equal, testRetry)
		}
		h.monitor.AwaitConfirmed(t, 2)
		f.So(h.count("publish_attempts = 0 AND last_error IS NULL"), should.Equal, 2)
		f.So(h.publisher.closed, should.BeFalse)
	})
}

// A row the broker nacks (a queue that is full and rejects publishes) is
// counted like a refusal, its last error kept, tried again after its
// policy's delay while the rows behind it move on, and retired when the
// policy gives up: a queue that nacks for ever does not hold the row for
// ever unseen.
func (f *IsolationFixture) TestARowTheBrokerKeepsNackingIsCountedAndRetired() {
	inBubble(f, func(t *testing.T) {
		h := newHarness(t, openSQLite(t), Options.RetryPolicy(retrypolicy.Fixed(3, testRetry)))
		var at []time.Duration
		start := time.Now()
		h.publisher.script = func(_ int, dispatches []messaging.Dispatch) (int, error) {
			at = append(at, time.Since(start))
			failure := &messaging.PublishError{}
			for _, d := range dispatches {
				result := messaging.PublishResult{MessageID: d.MessageID, Confirmed: true, Routed: true}
				if d.MessageID == "full" {
					result = messaging.PublishResult{MessageID: d.MessageID, Err: fmt.Errorf("basic.nack: %w", messaging.ErrRefused)}
				}
				failure.Results = append(failure.Results, result)
			}
			return len(dispatches) - 1, failure
		}
		f.So(h.Commit(messages("full", "next")...), should.BeNil)
		h.Listen()
		h.monitor.AwaitConfirmed(t, 1) // the row behind it did not wait
		f.So(h.log.Await(t, "failed to publish"), should.StartWith, "WARN Message [1] failed to publish [basic.nack: messaging: the broker refused the message]; attempt [1] of [3] counted.")
		h.log.Await(t, "Retired message [1] after [3]")
		f.So(at, should.Equal, []time.Duration{0, testRetry, 2 * testRetry})
		f.So(h.count("message_id = 'full' AND publish_attempts = 3 AND retired_us IS NOT NULL AND last_error LIKE '%basic.nack%'"), should.Equal, 1)
		_, _, _, retired := h.monitor.counts()
		f.So(retired, should.Equal, 1)
	})
}

// A row that can never travel on AMQP (an older version wrote it, or someone
// by hand) is retired before it is published, and the rows behind it publish.
func (f *IsolationFixture) TestARowBreakingAWireLimitIsRetiredAtOnceWithoutBeingPublished() {
	inBubble(f, func(t *testing.T) {
		db := openSQLite(t)
		h := newHarness(t, db, Options.MaxPayload(1024))
		now := micros(time.Now())
		for _, insert := range []struct {
			id, headers string
			payload     []byte
		}{
			{strings.Repeat("€", 100), "", []byte("x")},
			{"long-header", `{"` + strings.Repeat("h", 300) + `":{"s":"v"}}`, []byte("x")},
			{"too-large", "", make([]byte, 1025)},
		} {
			var headers any
			if insert.headers != "" {
				headers = insert.headers
			}
			_, err := db.Exec("INSERT INTO Messages (message_id, topic, headers, payload, created_us) VALUES (?, 'events', ?, ?, ?)", insert.id, headers, insert.payload, now)
			f.So(err, should.BeNil)
		}
		f.So(h.Commit(messages("behind")...), should.BeNil)
		h.Listen()
		h.monitor.AwaitConfirmed(t, 1)
		h.log.Await(t, "Retired message [3] at once: it can never be published")
		f.So(h.publisher.Published(), should.Equal, []string{"behind"})
		f.So(h.count("retired_us IS NOT NULL AND publish_attempts = 1"), should.Equal, 3)
		f.So(h.count("last_error LIKE '%MessageID is 300 bytes%'"), should.Equal, 1)
		f.So(h.count("last_error LIKE '%header name%'"), should.Equal, 1)
		f.So(h.count("last_error LIKE '%Payload is 1025 bytes%'"), should.Equal, 1)
		_, _, _, retired := h.monitor.counts()
		f.So(retired, should.Equal, 3)
	})
}

// The transport may refuse a message for a wire limit of its own (a lower
// maximum payload): that row is retired, the others land.
func (f *IsolationFixture) TestARowTheTransportRefusesForAWireLimitIsRetired() {
	inBubble(f, func(t *testing.T) {
		h := newHarness(t, openSQLite(t))
		h.publisher.script = func(_ int, dispatches []messaging.Dispatch) (int, error) {
			for _, d := range dispatches {
				if d.MessageID == "big" {
					return 0, fmt.Errorf("batch writer: write %d message(s): %w", len(dispatches), &messaging.FieldError{MessageID: "big", Field: "Payload", Size: 10, Limit: 5})
				}
			}
			return len(dispatches), nil
		}
		f.So(h.Commit(messages("a", "big", "b")...), should.BeNil)
		h.Listen()
		h.monitor.AwaitConfirmed(t, 2)
		h.log.Await(t, "Retired message [2] at once")
		f.So(h.count("message_id = 'big' AND retired_us IS NOT NULL"), should.Equal, 1)
	})
}
