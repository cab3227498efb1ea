package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

// The behaviours that keep one-message transactions cheap: a shared prepared
// insert, no lease renewal for rows their own commit leased, and lingering for
// more rows while they keep arriving.

func TestThroughputFixture(t *testing.T) {
	gunit.Run(new(ThroughputFixture), t)
}

type ThroughputFixture struct {
	*gunit.Fixture
	db *sql.DB
	h  *harness
}

func (f *ThroughputFixture) Setup() {
	f.db = openSQLite(tb(f))
	f.h = newHarness(tb(f), f.db)
}

func (f *ThroughputFixture) leaseUntil(messageID string) int64 {
	var until int64
	err := f.db.QueryRow("SELECT lease_until_us FROM Messages WHERE message_id = ?", messageID).Scan(&until)
	f.So(err, should.BeNil)
	return until
}

func (f *ThroughputFixture) TestCommitsShareOnePreparedInsert() {
	f.So(f.h.Commit(message("a")), should.BeNil)
	shared := f.h.processor.(*processor).outbox.store.preparedInsert()
	f.So(shared, should.NotBeNil)
	f.So(f.h.Commit(message("b")), should.BeNil)
	f.So(f.h.processor.(*processor).outbox.store.preparedInsert(), should.Equal, shared)
	f.So(f.h.count("1=1"), should.Equal, 2)
}

func (f *ThroughputFixture) TestCommitsStillStoreAfterThePreparedInsertIsReleased() {
	f.So(f.h.Commit(message("a")), should.BeNil)
	f.So(f.h.processor.Close(), should.BeNil)
	f.So(f.h.processor.(*processor).outbox.store.preparedInsert(), should.BeNil)
	f.So(f.h.Commit(message("b")), should.BeNil)
	f.So(f.h.count("1=1"), should.Equal, 2)
}

// A pool of one connection (usual for SQLite) must not wait for itself: the
// insert is prepared before the transaction takes the connection.
func (f *ThroughputFixture) TestACommitOnAPoolOfOneConnectionDoesNotWaitForItself() {
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
}

func (f *ThroughputFixture) TestARowHandedOverByItsCommitIsPublishedWithoutRenewingItsLease() {
	f.So(f.h.Commit(message("a")), should.BeNil)
	leased := f.leaseUntil("a")
	f.So(leased, should.Equal, micros(f.h.clock.Now().Add(testLease)))
	f.h.clock.Advance(testLease / 8)
	f.h.Listen()
	f.So(ids(f.h.publisher.Next(tb(f))), should.Equal, []string{"a"})
	f.h.monitor.AwaitConfirmed(tb(f), 1)
	f.So(f.leaseUntil("a"), should.Equal, leased)
}

func (f *ThroughputFixture) TestAHandedOverRowThatWaitedPastAQuarterOfItsLeaseIsRenewedFirst() {
	f.So(f.h.Commit(message("a")), should.BeNil)
	f.h.clock.Advance(testLease / 2)
	f.h.Listen()
	f.So(ids(f.h.publisher.Next(tb(f))), should.Equal, []string{"a"})
	f.h.monitor.AwaitConfirmed(tb(f), 1)
	f.So(f.leaseUntil("a"), should.Equal, micros(f.h.clock.Now().Add(testLease)))
}

func (f *ThroughputFixture) TestOnlyRowsLeasedByTheirOwnCommitSkipTheRenewal() {
	p := f.h.processor.(*processor)
	now := f.h.clock.Now()
	fresh := row{id: 1, leaseUntil: now.Add(testLease)}
	waited := row{id: 2, leaseUntil: now.Add(testLease / 2)}
	recovered := row{id: 3} // read back from storage by recovery or the sweep
	f.So(p.leased([]row{fresh, fresh}, now), should.BeTrue)
	f.So(p.leased([]row{fresh, waited}, now), should.BeFalse)
	f.So(p.leased([]row{recovered}, now), should.BeFalse)
	f.So(p.leased([]row{fresh, recovered}, now), should.BeFalse)
}

func (f *ThroughputFixture) TestAnIdleProcessorPublishesALoneRowAtOnce() {
	f.h.clock.Instant(0) // no timer ends by itself: a linger would hang here
	f.h.Listen()
	f.h.log.Await(tb(f), "Startup recovery found [0]")
	f.So(f.h.Commit(message("a")), should.BeNil)
	f.So(ids(f.h.publisher.Next(tb(f))), should.Equal, []string{"a"})
	f.h.monitor.AwaitConfirmed(tb(f), 1)
}

// busy publishes "a" alone and, while its publish is held, commits "b": the
// processor then has rows that arrived during a publish, and lingers.
func (f *ThroughputFixture) busy() {
	f.h.clock.Instant(0)
	f.h.publisher.gate = make(chan struct{})
	f.h.Listen()
	f.h.log.Await(tb(f), "Startup recovery found [0]")
	f.So(f.h.Commit(message("a")), should.BeNil)
	f.So(ids(f.h.publisher.Next(tb(f))), should.Equal, []string{"a"})
	f.So(f.h.Commit(message("b")), should.BeNil)
	close(f.h.publisher.gate)
	f.h.clock.Await(tb(f), DefaultLinger)
}

func (f *ThroughputFixture) TestABusyProcessorLingersWhileRowsKeepArriving() {
	f.busy()
	// The processor starts a gap timer each time it waits for the next row,
	// so counting them tells when it took a row and waits again.
	f.h.clock.AwaitTimers(tb(f), lingerGap, 1)
	f.So(f.h.Commit(message("c")), should.BeNil)
	f.h.clock.AwaitTimers(tb(f), lingerGap, 2)
	f.So(f.h.Commit(message("d")), should.BeNil)
	f.h.clock.AwaitTimers(tb(f), lingerGap, 3)
	f.So(f.h.publisher.Published(), should.Equal, []string{"a"})

	f.So(f.h.clock.Fire(lingerGap), should.BeGreaterThan, 0) // the burst is over
	f.So(ids(f.h.publisher.Next(tb(f))), should.Equal, []string{"b", "c", "d"})
	f.h.monitor.AwaitConfirmed(tb(f), 4)
}

func (f *ThroughputFixture) TestLingeringEndsAtItsBound() {
	f.busy()
	f.So(f.h.Commit(message("c")), should.BeNil)
	f.h.awaitChannel(0)
	f.So(f.h.clock.Fire(DefaultLinger), should.Equal, 1)
	f.So(ids(f.h.publisher.Next(tb(f))), should.Equal, []string{"b", "c"})
	f.h.monitor.AwaitConfirmed(tb(f), 3)
}

func (f *ThroughputFixture) TestAFullPageIsPublishedWithoutLingering() {
	h := newHarness(tb(f), f.db, Options.PageSize(2))
	h.clock.Instant(0)
	h.publisher.gate = make(chan struct{})
	h.Listen()
	h.log.Await(tb(f), "Startup recovery found [0]")
	f.So(h.Commit(message("a")), should.BeNil)
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"a"})
	f.So(h.Commit(messages("b", "c")...), should.BeNil)
	close(h.publisher.gate)
	f.So(ids(h.publisher.Next(tb(f))), should.Equal, []string{"b", "c"})
	h.monitor.AwaitConfirmed(tb(f), 3)
}

func (f *ThroughputFixture) TestLingerDefaultsWhenNotPositive() {
	f.So(newConfiguration([]option{Options.Linger(0)}).linger, should.Equal, DefaultLinger)
	f.So(newConfiguration([]option{Options.Linger(-time.Second)}).linger, should.Equal, DefaultLinger)
	f.So(newConfiguration([]option{Options.Linger(time.Millisecond)}).linger, should.Equal, time.Millisecond)
}

// One-message pages confirmed a millisecond apart are not marked by an
// UPDATE each: after one UPDATE the marker gathers for markEvery before the
// next while it holds less than a page. (Marked as they come, the twenty
// pages cost ten UPDATEs or more.)
func (f *ThroughputFixture) TestPagesConfirmedCloseTogetherShareOneMark() {
	const n = 20
	for i := range n {
		f.So(f.h.Commit(message(fmt.Sprint("m", i))), should.BeNil)
	}
	m := startMarker(f.h.processor.(*processor))
	defer m.stop()
	m.mark(context.Background(), []row{{id: 1}}) // the SQLite ids of the rows are 1-20
	f.h.monitor.AwaitConfirmed(tb(f), 1)
	for id := int64(2); id <= n; id++ {
		time.Sleep(time.Millisecond) // the marker is idle between them
		m.mark(context.Background(), []row{{id: id}})
	}
	f.h.monitor.AwaitConfirmed(tb(f), n)
	f.h.monitor.mu.Lock()
	defer f.h.monitor.mu.Unlock()
	f.So(f.h.monitor.marks, should.BeBetweenOrEqual, 2, 6)
}
