package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
)

func TestReplayFixture(t *testing.T) {
	gunit.Run(new(ReplayFixture), t)
}

// ReplayFixture replays orders.dlq on the memory transport, whose poll mode
// and requeue-on-close behave as RabbitMQ's do.
type ReplayFixture struct {
	*gunit.Fixture
	broker  *memory.Broker
	ctx     context.Context
	monitor *fakeMonitor
	// started is when the fixture began, to the second: every stamp is
	// written between it and the end of the test.
	started time.Time
}

func (f *ReplayFixture) Setup() {
	f.broker = memory.New()
	f.ctx = context.Background()
	f.monitor = &fakeMonitor{}
	f.started = time.Now().UTC().Truncate(time.Second)
	for _, q := range []string{"orders", "orders.dlq", "orders.parked", "elsewhere"} {
		f.So(f.broker.DeclareQueue(q, memory.QueueOptions{Durable: true}), should.BeNil)
	}
}

func (f *ReplayFixture) Teardown() { _ = f.broker.Close() }

// setAside puts n messages on queue as a dead-letter copy looks: attempt 5,
// a reason, an application header.
func (f *ReplayFixture) setAside(queue string, n int, headers func(i int) map[string]any) {
	for i := range n {
		h := map[string]any{"tenant": "t1"}
		if headers != nil {
			h = headers(i)
		}
		err := f.broker.Publish(f.ctx, messaging.Dispatch{
			RoutingKey: queue, MessageID: fmt.Sprint("m", i), MessageType: "OrderPlaced",
			Attempt: 5, Error: fmt.Sprintf("exhausted 5 attempts: timeout %d", i), Headers: h,
			ContentType: "application/json", Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)),
		})
		f.So(err, should.BeNil)
	}
}

func (f *ReplayFixture) run(from From) (Result, error) {
	return Run(f.ctx, f.broker, from, Options.Monitor(f.monitor))
}

// drain pulls every message of queue, by id.
func (f *ReplayFixture) drain(queue string) map[string]messaging.Delivery {
	got := map[string]messaging.Delivery{}
	for {
		d, ok := f.broker.Pull(queue)
		if !ok {
			return got
		}
		got[d.MessageID] = d
	}
}

func (f *ReplayFixture) TestEveryMessageMovesToTheQueueItWasSetAsideFromStampedAndOnAttemptOne() {
	f.setAside("orders.dlq", 10, nil)

	result, err := f.run(From{Queue: "orders.dlq"})

	f.So(err, should.BeNil)
	f.So(result, should.Resemble, Result{Moved: 10, Reason: Drained})
	f.So(result.String(), should.Equal, "moved 10, skipped 0 (drained)")
	moved := f.drain("orders")
	f.So(moved, should.HaveLength, 10)
	f.So(f.broker.MessageCount("orders.dlq"), should.Equal, 0)
	d := moved["m3"]
	f.So(d.Attempt, should.Equal, 1)
	f.So(d.Error, should.BeEmpty)
	f.So(d.MessageType, should.Equal, "OrderPlaced")
	f.So(string(d.Payload), should.Equal, `{"n":3}`)
	f.So(d.ContentType, should.Equal, "application/json")
	f.So(d.Durable, should.BeTrue)
	f.So(d.Headers["tenant"], should.Equal, "t1")
	f.So(d.Headers[HeaderReplayedFrom], should.Equal, "orders.dlq")
	at, err := time.Parse(time.RFC3339, fmt.Sprint(d.Headers[HeaderReplayedAt]))
	f.So(err, should.BeNil)
	f.So(d.Headers[HeaderReplayedAt], should.Equal, at.UTC().Format(time.RFC3339)) // UTC, whole seconds: 2026-02-03T04:05:06Z
	f.So(at, should.HappenOnOrBetween, f.started, time.Now())
	f.So(d.Headers[HeaderReplayCount], should.Equal, int32(1))
	f.So(f.monitor.moved, should.Equal, 10)
	f.So(f.monitor.finished, should.Resemble, []Result{result})
}

func (f *ReplayFixture) TestAParkedQueueGoesBackToItsSourceToo() {
	f.setAside("orders.parked", 2, nil)
	result, err := f.run(From{Queue: "orders.parked"})
	f.So(err, should.BeNil)
	f.So(result.Moved, should.Equal, 2)
	f.So(f.drain("orders"), should.HaveLength, 2)
}

func (f *ReplayFixture) TestKeepAttemptsPutsBackTheAttemptAndTheReason() {
	f.setAside("orders.dlq", 1, nil)
	_, err := f.run(From{Queue: "orders.dlq", KeepAttempts: true})
	f.So(err, should.BeNil)
	d := f.drain("orders")["m0"]
	f.So(d.Attempt, should.Equal, 5)
	f.So(d.Error, should.Equal, "exhausted 5 attempts: timeout 0")
}

func (f *ReplayFixture) TestTheReplayCountIsThePreviousOnePlusOneWhateverItsWidth() {
	f.setAside("orders.dlq", 3, func(i int) map[string]any {
		return map[string]any{HeaderReplayCount: []any{int32(2), "6", 9.0}[i]}
	})
	_, err := f.run(From{Queue: "orders.dlq"})
	f.So(err, should.BeNil)
	moved := f.drain("orders")
	f.So(moved["m0"].Headers[HeaderReplayCount], should.Equal, int32(3))
	f.So(moved["m1"].Headers[HeaderReplayCount], should.Equal, int32(7))
	f.So(moved["m2"].Headers[HeaderReplayCount], should.Equal, int32(10))
}

// The family writes acemq-replay-count as a signed 32-bit integer (an AMQP
// 'I' field); a count already at its largest stays there.
func (f *ReplayFixture) TestTheReplayCountIsWrittenAsASigned32BitInteger() {
	f.setAside("orders.dlq", 3, func(i int) map[string]any {
		return []map[string]any{nil, {HeaderReplayCount: int64(math.MaxInt32)}, {HeaderReplayCount: int64(math.MaxInt64)}}[i]
	})
	_, err := f.run(From{Queue: "orders.dlq"})
	f.So(err, should.BeNil)
	moved := f.drain("orders")
	f.So(moved["m0"].Headers[HeaderReplayCount], should.Equal, int32(1))
	f.So(moved["m1"].Headers[HeaderReplayCount], should.Equal, int32(math.MaxInt32))
	f.So(moved["m2"].Headers[HeaderReplayCount], should.Equal, int32(math.MaxInt32))
}

func (f *ReplayFixture) TestDeclinedMessagesStayAndTheLimitStopsThePass() {
	f.setAside("orders.dlq", 100, nil)
	declined := func(d messaging.Delivery) bool { return strings.HasSuffix(d.Error, "7") }
	var listed []string
	result, err := Run(f.ctx, f.broker, From{
		Queue: "orders.dlq", Limit: 50,
		Filter: func(d messaging.Delivery) bool { return !declined(d) },
	}, Options.Monitor(f.monitor), Options.Each(func(d messaging.Delivery, v Verdict) { listed = append(listed, string(v)+" "+d.MessageID) }))

	f.So(err, should.BeNil)
	// m0..m55 hold 50 accepted messages and the 6 declined m7, m17, ... m47;
	// m57 is never read.
	f.So(result, should.Resemble, Result{Moved: 50, Skipped: 5, Reason: Limit})
	f.So(result.String(), should.Equal, "moved 50, skipped 5 (limit)")
	f.So(listed, should.HaveLength, 55)
	f.So(listed, should.Contain, "declined m7")
	f.So(listed, should.Contain, "moved m8")
	moved, left := f.drain("orders"), f.drain("orders.dlq")
	f.So(moved, should.HaveLength, 50)
	f.So(left, should.HaveLength, 50)
	for i := range 100 {
		id := fmt.Sprint("m", i)
		_, isMoved := moved[id]
		_, isLeft := left[id]
		f.So(isMoved != isLeft, should.BeTrue)
		if i%10 == 7 {
			f.So(isLeft, should.BeTrue)
		}
	}
	f.So(f.monitor.declined, should.Equal, 5)
}

func (f *ReplayFixture) TestADryRunListsWhatWouldMoveAndMovesNothing() {
	f.setAside("orders.dlq", 20, nil)
	var wouldMove int
	result, err := Run(f.ctx, f.broker, From{Queue: "orders.dlq", DryRun: true, Limit: 15,
		Filter: func(d messaging.Delivery) bool { return d.MessageID != "m1" }},
		Options.Each(func(_ messaging.Delivery, v Verdict) {
			if v == Moved {
				wouldMove++
			}
		}))
	f.So(err, should.BeNil)
	f.So(result, should.Resemble, Result{Moved: 15, Skipped: 1, Reason: Limit, DryRun: true})
	f.So(result.String(), should.Equal, "would move 15, skipped 1 (limit)")
	f.So(wouldMove, should.Equal, 15)
	f.So(f.broker.MessageCount("orders"), should.Equal, 0)
	f.So(f.drain("orders.dlq"), should.HaveLength, 20)
}

func (f *ReplayFixture) TestAnUnroutableCopyStopsThePassAndTheOriginalGoesBack() {
	f.setAside("orders.dlq", 3, nil)
	result, err := f.run(From{Queue: "orders.dlq", Topic: "amq.direct", RoutingKey: "nobody-listens"})

	f.So(errors.Is(err, messaging.ErrUnroutable), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "did not land, so the original was not acknowledged")
	f.So(result, should.Resemble, Result{Reason: Failed})
	f.So(f.drain("orders.dlq"), should.HaveLength, 3)
}

func (f *ReplayFixture) TestAnExchangeAndKeyAreHonoured() {
	f.So(f.broker.Bind("elsewhere", "amq.direct", "again"), should.BeNil)
	f.setAside("orders.dlq", 2, nil)
	result, err := f.run(From{Queue: "orders.dlq", Topic: "amq.direct", RoutingKey: "again"})
	f.So(err, should.BeNil)
	f.So(result.Moved, should.Equal, 2)
	f.So(f.drain("elsewhere"), should.HaveLength, 2)
}

func (f *ReplayFixture) TestWithATopicAndNoKeyAnOrdinaryQueueKeepsEachMessagesOwnKey() {
	f.So(f.broker.DeclareQueue("holding", memory.QueueOptions{Durable: true}), should.BeNil)
	f.So(f.broker.Bind("holding", "amq.topic", "orders.#"), should.BeNil)
	f.So(f.broker.Bind("elsewhere", "amq.direct", "orders.placed"), should.BeNil)
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "amq.topic", RoutingKey: "orders.placed", MessageID: "k1", Payload: []byte("x")}), should.BeNil)

	result, err := f.run(From{Queue: "holding", Topic: "amq.direct"})
	f.So(err, should.BeNil)
	f.So(result.Moved, should.Equal, 1)
	f.So(f.drain("elsewhere"), should.ContainKey, "k1")
}

func (f *ReplayFixture) TestADestinationThatLeadsBackStopsThePassInsteadOfLooping() {
	f.So(f.broker.DeclareQueue("holding", memory.QueueOptions{Durable: true}), should.BeNil)
	f.So(f.broker.Bind("holding", "amq.direct", "k"), should.BeNil)
	n := pipeline + 1 // the first batch's copies come back before the queue is empty
	for i := range n {
		f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "amq.direct", RoutingKey: "k", MessageID: fmt.Sprint("k", i), Payload: []byte("x")}), should.BeNil)
	}
	result, err := f.run(From{Queue: "holding", Topic: "amq.direct"})
	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.ContainSubstring, "came back to holding after it was moved")
	f.So(result, should.Resemble, Result{Moved: n, Reason: Failed})
	f.So(f.drain("holding"), should.HaveLength, n)
}

func (f *ReplayFixture) TestInABatchWithAnUnroutableCopyOnlyTheOriginalsWhoseCopiesLandedAreAcknowledged() {
	f.So(f.broker.DeclareQueue("holding", memory.QueueOptions{Durable: true}), should.BeNil)
	f.So(f.broker.Bind("holding", "amq.topic", "orders.#"), should.BeNil)
	f.So(f.broker.Bind("elsewhere", "amq.direct", "orders.a"), should.BeNil)
	for i, key := range []string{"orders.a", "orders.a", "orders.b", "orders.a"} {
		f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "amq.topic", RoutingKey: key, MessageID: fmt.Sprint("k", i), Payload: []byte("x")}), should.BeNil)
	}
	var moved []string
	result, err := Run(f.ctx, f.broker, From{Queue: "holding", Topic: "amq.direct"},
		Options.Each(func(d messaging.Delivery, v Verdict) { moved = append(moved, d.MessageID) }))

	f.So(errors.Is(err, messaging.ErrUnroutable), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "message k2")
	f.So(err.Error(), should.ContainSubstring, "3 of the 4 copies published with it landed")
	f.So(result, should.Resemble, Result{Moved: 3, Reason: Failed})
	f.So(moved, should.Resemble, []string{"k0", "k1", "k3"})
	f.So(f.drain("elsewhere"), should.HaveLength, 3)
	left := f.drain("holding")
	f.So(left, should.HaveLength, 1)
	f.So(left, should.ContainKey, "k2")
}

func (f *ReplayFixture) TestAPassedDeadlineMovesNothing() {
	f.setAside("orders.dlq", 2, nil)
	result, err := f.run(From{Queue: "orders.dlq", Deadline: time.Now().Add(-time.Second)})
	f.So(err, should.BeNil)
	f.So(result, should.Resemble, Result{Reason: Deadline})
	f.So(f.broker.MessageCount("orders.dlq"), should.Equal, 2)
}

func (f *ReplayFixture) TestACancelledContextMovesNothingAndSaysSo() {
	f.setAside("orders.dlq", 2, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	result, err := Run(ctx, f.broker, From{Queue: "orders.dlq", Filter: func(messaging.Delivery) bool {
		cancel()
		return true
	}})
	f.So(errors.Is(err, context.Canceled), should.BeTrue)
	f.So(result, should.Resemble, Result{Reason: Cancelled})
	f.So(f.broker.MessageCount("orders.dlq"), should.Equal, 2)
	f.So(f.broker.MessageCount("orders"), should.Equal, 0)
}

func (f *ReplayFixture) TestMoreThanABatchMovesInBatchesAndStopsExactlyAtTheLimit() {
	f.setAside("orders.dlq", 3*pipeline+5, nil)
	result, err := f.run(From{Queue: "orders.dlq", Limit: 2*pipeline + 1})
	f.So(err, should.BeNil)
	f.So(result, should.Resemble, Result{Moved: 2*pipeline + 1, Reason: Limit})
	f.So(f.broker.MessageCount("orders"), should.Equal, 2*pipeline+1)
	f.So(f.broker.MessageCount("orders.dlq"), should.Equal, pipeline+4)
	result, err = f.run(From{Queue: "orders.dlq"})
	f.So(err, should.BeNil)
	f.So(result, should.Resemble, Result{Moved: pipeline + 4, Reason: Drained})
	f.So(f.drain("orders"), should.HaveLength, 3*pipeline+5)
}

func (f *ReplayFixture) TestAnEmptyQueueIsDrainedAtOnce() {
	result, err := f.run(From{Queue: "orders.dlq"})
	f.So(err, should.BeNil)
	f.So(result, should.Resemble, Result{Reason: Drained})
}

func (f *ReplayFixture) TestAMissingQueueFailsThePass() {
	result, err := f.run(From{Queue: "nothing.dlq"})
	f.So(err, should.NotBeNil)
	f.So(errors.Is(err, messaging.ErrNotFound), should.BeTrue)
	f.So(result.Reason, should.Equal, Failed)
}

func (f *ReplayFixture) TestWhatCannotWorkIsRefusedBeforeConnecting() {
	for _, c := range []struct {
		from From
		says string
	}{
		{From{}, "From.Queue is empty"},
		{From{Queue: "orders"}, "not a dead-letter or parking queue"},
		{From{Queue: "orders.dlq", RoutingKey: "orders.dlq"}, "never drain"},
		{From{Queue: "orders.dlq", Limit: -1}, "From.Limit is -1"},
	} {
		result, err := Run(f.ctx, f.broker, c.from)
		f.So(err, should.NotBeNil)
		f.So(err.Error(), should.ContainSubstring, c.says)
		f.So(result.Reason, should.Equal, Failed)
	}
}

func (f *ReplayFixture) TestSourceOf() {
	for queue, want := range map[string]string{"orders.dlq": "orders", "orders.parked": "orders", "a.b.dlq": "a.b", ".dlq": "", "orders": ""} {
		source, ok := SourceOf(queue)
		f.So(source, should.Equal, want)
		f.So(ok, should.Equal, want != "")
	}
}

type fakeMonitor struct {
	moved, declined int
	finished        []Result
}

func (m *fakeMonitor) Moved(string)                { m.moved++ }
func (m *fakeMonitor) Declined(string)             { m.declined++ }
func (m *fakeMonitor) Finished(_ string, r Result) { m.finished = append(m.finished, r) }
