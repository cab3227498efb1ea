package sqlmq

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestHandoffFixture(t *testing.T) {
	gunit.Run(new(HandoffFixture), t)
}

type HandoffFixture struct {
	*gunit.Fixture
	db *sql.DB
}

func (f *HandoffFixture) Setup() {
	f.db = openSQLite(tb(f))
}

func (f *HandoffFixture) TestClosingTheConnectionNeverWaitsBehindACommitInHandoff() {
	h := newHarness(tb(f), f.db, Options.ChannelBufferCapacity(1))
	connection, err := h.connector.Connect(context.Background())
	f.So(err, should.BeNil)
	writer, err := connection.CommitWriter(context.Background())
	f.So(err, should.BeNil)
	_, _ = writer.Write(context.Background(), messages("a", "b")...)
	committed := make(chan error, 1)
	go func() { committed <- writer.Commit() }()
	h.clock.Await(tb(f), testHandoff) // the commit is in its handoff, waiting for the processor

	closed := make(chan error, 1)
	go func() { closed <- connection.Close() }()
	select {
	case err := <-closed:
		f.So(err, should.BeNil)
	case <-time.After(testBound):
		tb(f).Fatalf("closing the connection waited behind a commit in handoff")
	}
	f.So(h.processor.Close(), should.BeNil) // ends the handoff
	select {
	case err := <-committed:
		f.So(err, should.BeNil)
	case <-time.After(testBound):
		tb(f).Fatalf("Commit did not return after the processor closed")
	}
}

func (f *HandoffFixture) TestAProcessorThatDoesNotAcceptWithinTheTimeoutGetsTheRestInTheBackground() {
	h := newHarness(tb(f), f.db, Options.ChannelBufferCapacity(1))
	result := h.CommitAsync(messages("a", "b", "c")...)
	h.clock.Await(tb(f), testHandoff)
	h.awaitChannel(1)
	h.clock.Fire(testHandoff)
	f.So(await(tb(f), result), should.BeNil)
	f.So(h.log.Await(tb(f), "WARN Committed"), should.Equal,
		"WARN Committed [3] message(s) to durable storage, but the dispatch processor did not accept [2] of them within [10s]. The handoff continues in the background.")

	h.Listen()
	h.monitor.AwaitConfirmed(tb(f), 3)
	f.So(h.publisher.Published(), should.Equal, []string{"a", "b", "c"})
}

func (f *HandoffFixture) TestPastTheDeferredCapacityCommitWaitsForTheProcessor() {
	h := newHarness(tb(f), f.db, Options.ChannelBufferCapacity(1), Options.DeferredHandoffCapacity(1))
	first := h.CommitAsync(messages("a1", "a2")...)
	h.clock.Await(tb(f), testHandoff)
	h.awaitChannel(1)
	h.clock.Fire(testHandoff)
	f.So(await(tb(f), first), should.BeNil)

	second := h.CommitAsync(message("b1"))
	h.clock.AwaitFire(tb(f), testHandoff)
	f.So(h.log.Await(tb(f), "Deferred handoff capacity"), should.Equal,
		"WARN Deferred handoff capacity [1] reached; waiting for the dispatch processor to accept [1] message(s).")
	select {
	case <-second:
		f.Error("Commit returned while the deferred capacity was full")
	default:
	}

	h.Listen()
	f.So(await(tb(f), second), should.BeNil)
	h.monitor.AwaitConfirmed(tb(f), 3)
	f.So(h.publisher.Published(), should.Equal, []string{"a1", "a2", "b1"})
}

func (f *HandoffFixture) TestLaterCommitsQueueBehindADeferredHandoff() {
	h := newHarness(tb(f), f.db, Options.ChannelBufferCapacity(1))
	first := h.CommitAsync(messages("a1", "a2")...)
	h.clock.Await(tb(f), testHandoff)
	h.awaitChannel(1)
	h.clock.Fire(testHandoff)
	f.So(await(tb(f), first), should.BeNil)
	second := h.CommitAsync(message("b1"))
	h.clock.AwaitFire(tb(f), testHandoff)
	f.So(await(tb(f), second), should.BeNil)

	h.Listen()
	h.monitor.AwaitConfirmed(tb(f), 3)
	f.So(h.publisher.Published(), should.Equal, []string{"a1", "a2", "b1"})
}

func (f *HandoffFixture) TestCloseDuringTheHandoffLeavesTheRowsForTheNextStartAndCommitSucceeds() {
	h := newHarness(tb(f), f.db, Options.ChannelBufferCapacity(1))
	result := h.CommitAsync(messages("a", "b", "c")...)
	h.clock.Await(tb(f), testHandoff)
	h.awaitChannel(1)
	f.So(h.processor.Close(), should.BeNil)
	f.So(await(tb(f), result), should.BeNil)
	f.So(h.log.Await(tb(f), "Context ended"), should.Equal,
		"INFO Context ended during handoff; [2] committed message(s) remain in durable storage for the next startup.")
	f.So(h.count("dispatched_us IS NULL"), should.Equal, 3)
}

func (f *HandoffFixture) TestCloseStopsABackgroundHandoff() {
	h := newHarness(tb(f), f.db, Options.ChannelBufferCapacity(1))
	result := h.CommitAsync(messages("a", "b")...)
	h.clock.Await(tb(f), testHandoff)
	h.awaitChannel(1)
	h.clock.Fire(testHandoff)
	f.So(await(tb(f), result), should.BeNil)
	f.So(h.processor.Close(), should.BeNil)
	f.So(h.log.Await(tb(f), "Context ended"), should.Equal,
		"INFO Context ended during handoff; [1] committed message(s) remain in durable storage for the next startup.")
}

func (f *HandoffFixture) TestACommitAfterCloseIsStoredAndSucceeds() {
	h := newHarness(tb(f), f.db)
	f.So(h.processor.Close(), should.BeNil)
	f.So(h.Commit(message("a")), should.BeNil)
	f.So(h.count("dispatched_us IS NULL"), should.Equal, 1)
}

func (f *HandoffFixture) TestListenReturnsOnCloseEvenWhenTheChannelIsFull() {
	h := newHarness(tb(f), f.db, Options.ChannelBufferCapacity(1), Options.PageSize(1))
	h.publisher.gate = make(chan struct{})
	f.So(h.Commit(message("a")), should.BeNil)
	h.Listen()
	h.publisher.Next(tb(f))
	f.So(h.Commit(message("b")), should.BeNil) // fills the channel
	result := h.CommitAsync(message("c"))
	h.clock.Await(tb(f), testHandoff)
	f.So(h.processor.Close(), should.BeNil)
	h.AwaitStopped()
	f.So(await(tb(f), result), should.BeNil)
	f.So(h.count("dispatched_us IS NULL"), should.Equal, 3)
}
