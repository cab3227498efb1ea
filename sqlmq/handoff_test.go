package sqlmq

import (
	"context"
	"database/sql"
	"time"

	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestHandoffFixture(t *testing.T) {
	gunit.Run(new(HandoffFixture), t)
}

type HandoffFixture struct {
	*gunit.Fixture
	t  *testing.T // the bubble's
	db *sql.DB
}

// run runs test in a bubble over a fresh SQLite database.
func (f *HandoffFixture) run(test func()) {
	inBubble(f, func(t *testing.T) {
		f.t = t
		f.db = openSQLite(t)
		test()
	})
}

// With nobody taking rows from the channel, Commit still returns at once: the
// rows are durable, and the processor publishes those the channel could not
// hold from the table, in commit order.
func (f *HandoffFixture) TestCommitNeverWaitsForAFullChannel() {
	f.run(func() {
		h := newHarness(f.t, f.db, Options.ChannelBufferCapacity(1))
		f.So(await(f.t, h.CommitAsync(messages("a", "b", "c")...)), should.BeNil)
		f.So(await(f.t, h.CommitAsync(message("d"))), should.BeNil)
		f.So(len(h.processor.(*processor).outbox.channel), should.Equal, 1)
		f.So(h.log.Await(f.t, "channel is full"), should.Equal,
			"WARN The dispatch processor's channel is full [1]; committed message(s) stay in durable storage and the processor publishes them from there.")
		f.So(h.count("dispatched_us IS NULL"), should.Equal, 4)

		h.Listen()
		h.monitor.AwaitConfirmed(f.t, 4)
		f.So(h.publisher.Published(), should.Equal, []string{"a", "b", "c", "d"})
		h.log.Await(f.t, "commits hand their messages to it again")

		f.So(h.Commit(message("e")), should.BeNil) // through the channel again
		h.monitor.AwaitConfirmed(f.t, 5)
		f.So(h.publisher.Published(), should.Equal, []string{"a", "b", "c", "d", "e"})
		f.So(h.processor.(*processor).outbox.isSuspended(), should.BeFalse)
	})
}

// Once a handoff found the channel full, later commits leave their rows in the
// table even when the channel has room again, so none overtakes a row
// committed before it.
func (f *HandoffFixture) TestCommitsAfterAFullChannelDoNotOvertakeTheRowsLeftInTheTable() {
	f.run(func() {
		h := newHarness(f.t, f.db, Options.ChannelBufferCapacity(1), Options.PageSize(1))
		h.publisher.gate = make(chan struct{})
		h.Listen()
		f.So(h.Commit(message("a")), should.BeNil)
		h.publisher.Next(f.t) // a is being published, and holds the processor
		f.So(h.Commit(message("b")), should.BeNil)
		f.So(h.Commit(message("c")), should.BeNil) // the channel holds b: c stays in the table
		f.So(h.processor.(*processor).outbox.isSuspended(), should.BeTrue)
		h.publisher.gate <- struct{}{} // a lands; the processor takes b
		h.publisher.Next(f.t)
		f.So(h.Commit(message("d")), should.BeNil) // the channel has room, but c is older
		f.So(len(h.processor.(*processor).outbox.channel), should.Equal, 0)
		close(h.publisher.gate)
		h.monitor.AwaitConfirmed(f.t, 4)
		f.So(h.publisher.Published(), should.Equal, []string{"a", "b", "c", "d"})
	})
}

// Memory stays bounded by the channel however many commits the processor is
// behind, and every Commit returns.
func (f *HandoffFixture) TestManyCommitsBehindAStuckProcessorAllReturnAndAllArePublished() {
	f.run(func() {
		h := newHarness(f.t, f.db, Options.ChannelBufferCapacity(4), Options.PageSize(7))
		h.publisher.gate = make(chan struct{})
		h.Listen()
		var ids []string
		for i := range 40 {
			id := string(rune('A'+i/26)) + string(rune('a'+i%26))
			ids = append(ids, id)
			started := time.Now()
			f.So(h.Commit(message(id)), should.BeNil)
			f.So(time.Since(started), should.BeLessThan, time.Second)
			f.So(len(h.processor.(*processor).outbox.channel), should.BeLessThanOrEqualTo, 4)
		}
		close(h.publisher.gate)
		h.monitor.AwaitConfirmed(f.t, 40)
		f.So(h.publisher.Published(), should.Equal, ids)
	})
}

func (f *HandoffFixture) TestACommitAfterCloseIsStoredAndSucceeds() {
	f.run(func() {
		h := newHarness(f.t, f.db)
		f.So(h.processor.Close(), should.BeNil)
		f.So(h.Commit(message("a")), should.BeNil)
		f.So(h.count("dispatched_us IS NULL"), should.Equal, 1)
		f.So(len(h.processor.(*processor).outbox.channel), should.Equal, 0)
	})
}

func (f *HandoffFixture) TestListenReturnsOnCloseEvenWhenTheChannelIsFull() {
	f.run(func() {
		h := newHarness(f.t, f.db, Options.ChannelBufferCapacity(1), Options.PageSize(1))
		h.publisher.gate = make(chan struct{})
		f.So(h.Commit(message("a")), should.BeNil)
		h.Listen()
		h.publisher.Next(f.t)
		f.So(h.Commit(message("b")), should.BeNil) // fills the channel
		f.So(h.Commit(message("c")), should.BeNil) // stays in the table
		f.So(h.processor.Close(), should.BeNil)
		h.AwaitStopped()
		f.So(h.count("dispatched_us IS NULL"), should.Equal, 3)
		f.So(h.count("lease_owner IS NULL"), should.Equal, 3) // released for the next start
	})
}

func (f *HandoffFixture) TestClosingTheConnectionAfterACommitIsImmediate() {
	f.run(func() {
		h := newHarness(f.t, f.db, Options.ChannelBufferCapacity(1))
		connection, err := h.connector.Connect(context.Background())
		f.So(err, should.BeNil)
		writer, err := connection.CommitWriter(context.Background())
		f.So(err, should.BeNil)
		_, _ = writer.Write(context.Background(), messages("a", "b")...)
		f.So(writer.Commit(), should.BeNil)
		f.So(connection.Close(), should.BeNil)
	})
}
