package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

// The behaviours that keep one-message transactions cheap: a shared prepared
// insert, no lease renewal for rows their own commit leased, and lingering for
// more rows while they keep arriving.

func TestThroughputFixture(t *testing.T) {
	gunit.Run(new(ThroughputFixture), t)
}

type ThroughputFixture struct {
	*gunit.Fixture
	t  *testing.T // the bubble's
	db *sql.DB
	h  *harness
}

// run runs test in a bubble, with a harness over a fresh SQLite database.
func (f *ThroughputFixture) run(test func()) {
	inBubble(f, func(t *testing.T) {
		f.t = t
		f.db = openSQLite(t)
		f.h = newHarness(t, f.db)
		test()
	})
}

func (f *ThroughputFixture) leaseUntil(messageID string) int64 {
	var until int64
	err := f.db.QueryRow("SELECT lease_until_us FROM Messages WHERE message_id = ?", messageID).Scan(&until)
	f.So(err, should.BeNil)
	return until
}

func (f *ThroughputFixture) TestCommitsShareOnePreparedInsert() {
	f.run(func() {
		f.So(f.h.Commit(message("a")), should.BeNil)
		shared := f.h.processor.(*processor).outbox.store.preparedInsert()
		f.So(shared, should.NotBeNil)
		f.So(f.h.Commit(message("b")), should.BeNil)
		f.So(f.h.processor.(*processor).outbox.store.preparedInsert(), should.Equal, shared)
		f.So(f.h.count("1=1"), should.Equal, 2)
	})
}

func (f *ThroughputFixture) TestCommitsStillStoreAfterThePreparedInsertIsReleased() {
	f.run(func() {
		f.So(f.h.Commit(message("a")), should.BeNil)
		f.So(f.h.processor.Close(), should.BeNil)
		f.So(f.h.processor.(*processor).outbox.store.preparedInsert(), should.BeNil)
		f.So(f.h.Commit(message("b")), should.BeNil)
		f.So(f.h.count("1=1"), should.Equal, 2)
	})
}

// A pool of one connection (usual for SQLite) must not wait for itself: the
// insert is prepared before the transaction takes the connection.
func (f *ThroughputFixture) TestACommitOnAPoolOfOneConnectionDoesNotWaitForItself() {
	f.run(func() {
		f.db.SetMaxOpenConns(1)
		ctx, cancel := context.WithTimeout(context.Background(), testBound)
		defer cancel()
		connection, err := f.h.connector.Connect(ctx)
		f.So(err, should.BeNil)
		defer func() { _ = connection.Close() }()
		writer, err := connection.CommitWriter(ctx)
		f.So(err, should.BeNil)
		_, err = writer.Write(ctx, message("a"))
		f.So(err, should.BeNil)
		f.So(writer.Commit(), should.BeNil)
		f.So(f.h.count("1=1"), should.Equal, 1)
	})
}

func (f *ThroughputFixture) TestARowHandedOverByItsCommitIsPublishedWithoutRenewingItsLease() {
	f.run(func() {
		f.So(f.h.Commit(message("a")), should.BeNil)
		leased := f.leaseUntil("a")
		f.So(leased, should.Equal, micros(time.Now().Add(testLease)))
		elapse(testLease / 8) // the row waits, not long
		f.h.Listen()
		f.So(ids(f.h.publisher.Next(f.t)), should.Equal, []string{"a"})
		f.h.monitor.AwaitConfirmed(f.t, 1)
		f.So(f.leaseUntil("a"), should.Equal, leased)
	})
}

func (f *ThroughputFixture) TestAHandedOverRowThatWaitedPastAQuarterOfItsLeaseIsRenewedFirst() {
	f.run(func() {
		f.So(f.h.Commit(message("a")), should.BeNil)
		elapse(testLease / 2) // half the lease has run
		listening := time.Now()
		f.h.Listen()
		f.So(ids(f.h.publisher.Next(f.t)), should.Equal, []string{"a"})
		f.h.monitor.AwaitConfirmed(f.t, 1)
		f.So(f.leaseUntil("a"), should.Equal, micros(listening.Add(testLease)))
	})
}

func (f *ThroughputFixture) TestOnlyRowsLeasedByTheirOwnCommitSkipTheRenewal() {
	f.run(func() {
		p := f.h.processor.(*processor)
		now := time.Now()
		fresh := row{id: 1, leaseUntil: now.Add(testLease)}
		waited := row{id: 2, leaseUntil: now.Add(testLease / 2)}
		recovered := row{id: 3} // read back from storage by recovery or the sweep
		f.So(p.leased([]row{fresh, fresh}, now), should.BeTrue)
		f.So(p.leased([]row{fresh, waited}, now), should.BeFalse)
		f.So(p.leased([]row{recovered}, now), should.BeFalse)
		f.So(p.leased([]row{fresh, recovered}, now), should.BeFalse)
	})
}

func (f *ThroughputFixture) TestAnIdleProcessorPublishesALoneRowAtOnce() {
	f.run(func() {
		f.h.Listen()
		f.h.log.Await(f.t, "Startup recovery found [0]")
		f.So(f.h.Commit(message("a")), should.BeNil)
		committed := time.Now()
		f.So(ids(f.h.publisher.Next(f.t)), should.Equal, []string{"a"})
		f.So(time.Since(committed), should.Equal, time.Duration(0))
		f.h.monitor.AwaitConfirmed(f.t, 1)
	})
}

// busy publishes "a" alone and, while its publish is held, commits "b": the
// processor then has rows that arrived during a publish, and lingers. It
// returns once the processor waits for more, with b in hand.
func (f *ThroughputFixture) busy(h *harness) {
	h.publisher.gate = make(chan struct{})
	h.Listen()
	h.log.Await(f.t, "Startup recovery found [0]")
	f.So(h.Commit(message("a")), should.BeNil)
	f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"a"})
	f.So(h.Commit(message("b")), should.BeNil)
	close(h.publisher.gate)
	synctest.Wait()
}

// commitEvery commits one message every gap, n times, on the bubble's clock.
func (f *ThroughputFixture) commitEvery(gap time.Duration, ids ...string) {
	for _, id := range ids {
		elapse(gap) // rows arriving gap apart
		f.So(f.h.Commit(message(id)), should.BeNil)
	}
}

// publishedAt records when each write was published, on the bubble's clock.
func (f *ThroughputFixture) publishedAt() *[]time.Duration {
	start := time.Now()
	var at []time.Duration
	f.h.publisher.script = func(_ int, dispatches []messaging.Dispatch) (int, error) {
		at = append(at, time.Since(start))
		return len(dispatches), nil
	}
	return &at
}

func (f *ThroughputFixture) TestABusyProcessorLingersWhileRowsKeepArriving() {
	f.run(func() {
		f.busy(f.h)
		at := f.publishedAt()
		f.commitEvery(lingerGap/2, "c", "d", "e")
		f.So(f.h.publisher.Published(), should.Equal, []string{"a"})
		f.So(ids(f.h.publisher.Next(f.t)), should.Equal, []string{"b", "c", "d", "e"})
		f.h.monitor.AwaitConfirmed(f.t, 5)
		// Published one gap after the last row arrived: the burst was over.
		f.So(*at, should.Equal, []time.Duration{3*lingerGap/2 + lingerGap})
	})
}

func (f *ThroughputFixture) TestLingeringEndsAtItsBound() {
	f.run(func() {
		f.busy(f.h)
		at := f.publishedAt()
		var steady []string
		for i := range 20 {
			steady = append(steady, fmt.Sprint("r", i+1))
		}
		f.commitEvery(lingerGap*3/4, steady...) // 0.75 ms apart: never a gap
		f.So(ids(f.h.publisher.Next(f.t)), should.Equal, append([]string{"b"}, steady[:13]...))
		f.h.monitor.AwaitConfirmed(f.t, 22)
		f.So((*at)[0], should.Equal, DefaultLinger)
	})
}

func (f *ThroughputFixture) TestAFullPageIsPublishedWithoutLingering() {
	f.run(func() {
		h := newHarness(f.t, f.db, Options.PageSize(2))
		h.publisher.gate = make(chan struct{})
		h.Listen()
		h.log.Await(f.t, "Startup recovery found [0]")
		f.So(h.Commit(message("a")), should.BeNil)
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"a"})
		f.So(h.Commit(messages("b", "c")...), should.BeNil)
		released := time.Now()
		close(h.publisher.gate)
		f.So(ids(h.publisher.Next(f.t)), should.Equal, []string{"b", "c"})
		f.So(time.Since(released), should.Equal, time.Duration(0))
		h.monitor.AwaitConfirmed(f.t, 3)
	})
}

func (f *ThroughputFixture) TestLingerDefaultsWhenNotPositive() {
	f.So(newConfig([]Option{Options.Linger(0)}).linger, should.Equal, DefaultLinger)
	f.So(newConfig([]Option{Options.Linger(-time.Second)}).linger, should.Equal, DefaultLinger)
	f.So(newConfig([]Option{Options.Linger(time.Millisecond)}).linger, should.Equal, time.Millisecond)
}

// One-message pages confirmed a millisecond apart are not marked by an
// UPDATE each: after one UPDATE the marker gathers for markEvery before the
// next while it holds less than a page. (Marked as they come, the twenty
// pages would cost twenty UPDATEs.)
func (f *ThroughputFixture) TestPagesConfirmedCloseTogetherShareOneMark() {
	f.run(func() {
		const n = 20
		for i := range n {
			f.So(f.h.Commit(message(fmt.Sprint("m", i))), should.BeNil)
		}
		m := startMarker(f.h.processor.(*processor))
		defer m.stop()
		m.mark(context.Background(), []row{{id: 1}}) // the SQLite ids of the rows are 1-20
		f.h.monitor.AwaitConfirmed(f.t, 1)
		for id := int64(2); id <= n; id++ {
			elapse(time.Millisecond) // the marker is idle between them
			m.mark(context.Background(), []row{{id: id}})
		}
		f.h.monitor.AwaitConfirmed(f.t, n)
		f.h.monitor.mu.Lock()
		defer f.h.monitor.mu.Unlock()
		f.So(f.h.monitor.marks, should.Equal, 2)
	})
}
