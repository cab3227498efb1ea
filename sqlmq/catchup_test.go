package sqlmq

import (
	"strings"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestCatchUpFixture(t *testing.T) {
	gunit.Run(new(CatchUpFixture), t)
}

// The catch-up reads the rows left in the table page after page, each past
// the last; before handoffs resume it reads once more from the first row, so
// a row a transaction committed after the pass went past its id is published
// too.
type CatchUpFixture struct {
	*gunit.Fixture
}

func (f *CatchUpFixture) TestARowCommittedBelowTheCursorIsPublishedBeforeHandoffsResume() {
	inBubble(f, func(t *testing.T) {
		db := openSQLite(t)
		h := newHarness(t, db, Options.ChannelBufferCapacity(1), Options.PageSize(1))
		f.So(h.Commit(message("a")), should.BeNil)   // id 1, in the channel
		f.So(h.Commit(message("gap")), should.BeNil) // id 2, left in the table
		_, err := db.Exec("DELETE FROM Messages WHERE message_id = 'gap'")
		f.So(err, should.BeNil)
		f.So(h.Commit(messages("c", "d")...), should.BeNil) // ids 3 and 4, in the table

		h.publisher.gate = make(chan struct{})
		h.Listen()
		f.So(ids(h.publisher.Next(t)), should.Equal, []string{"a"})
		h.publisher.gate <- struct{}{}
		f.So(ids(h.publisher.Next(t)), should.Equal, []string{"c"}) // the pass is past id 3

		// Row 2 commits late, below the cursor, leased to this instance like c.
		rest := strings.TrimPrefix(columns, "message_id, ")
		_, err = db.Exec("INSERT INTO Messages (id, " + columns + ", lease_owner, lease_until_us) SELECT 2, 'late', " + rest +
			", lease_owner, lease_until_us FROM Messages WHERE message_id = 'c'")
		f.So(err, should.BeNil)
		close(h.publisher.gate)
		h.monitor.AwaitConfirmed(t, 4)
		h.log.Await(t, "commits hand their messages to it again")
		f.So(h.publisher.Published(), should.Equal, []string{"a", "c", "d", "late"})
		f.So(h.count("dispatched_us IS NULL"), should.Equal, 0)
	})
}

// A full page of a pass has the next page read while it is published, so the
// broker is not left idle while the table is read. The proof: rows deleted
// from the table after that read, while the page before is still being
// published, are published all the same (they are leased to this instance:
// a real deletion does not happen).
func (f *CatchUpFixture) TestTheNextPageIsReadWhileAFullPageIsPublished() {
	inBubble(f, func(t *testing.T) {
		db := openSQLite(t)
		readAhead := make(chan int64, 10)
		h := newHarness(t, db, Options.ChannelBufferCapacity(1), Options.PageSize(2),
			func(c *config) { c.readAhead = func(after int64) { readAhead <- after } })
		f.So(h.Commit(message("a")), should.BeNil)                    // id 1, in the channel
		f.So(h.Commit(messages("b", "c", "d", "e")...), should.BeNil) // ids 2-5, in the table

		h.publisher.gate = make(chan struct{})
		h.Listen()
		f.So(ids(h.publisher.Next(t)), should.Equal, []string{"a"})
		h.publisher.gate <- struct{}{}
		f.So(ids(h.publisher.Next(t)), should.Equal, []string{"b", "c"})
		select {
		case after := <-readAhead:
			f.So(after, should.Equal, 3)
		case <-time.After(testBound):
			f.So("the page after id 3 was not read while b and c were published", should.BeEmpty)
		}
		_, err := db.Exec("DELETE FROM Messages WHERE message_id IN ('d', 'e')")
		f.So(err, should.BeNil)
		close(h.publisher.gate)
		f.So(ids(h.publisher.Next(t)), should.Equal, []string{"d", "e"})
	})
}
