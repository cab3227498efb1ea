package sqlmq

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

// commitInDoubt is an outbox on MariaDB whose connections pass through a
// CommitCutter, so a test decides what happens to its next COMMIT.
type commitInDoubt struct {
	db      *sql.DB // straight to MariaDB, for looking
	table   string
	cutter  *testenv.CommitCutter
	monitor *fakeMonitor
	outbox  *instance
}

func newCommitInDoubt(t *testing.T, options ...Option) *commitInDoubt {
	b := backends[0] // MariaDB
	db := b.open(t)
	table := outboxTable(t, b, db)
	cutter := testenv.CutCommits(t)
	proxied, err := sql.Open("mysql", cutter.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxied.Close() })
	// The processor never runs: what is in doubt is the commit, not the publish.
	outbox := newInstance(t, b, proxied, table, options...)
	return &commitInDoubt{db: db, table: table, cutter: cutter, monitor: outbox.monitor, outbox: outbox}
}

// stored counts the rows of ids in the table.
func (c *commitInDoubt) stored(t *testing.T, ids ...string) int {
	var n int
	if err := c.db.QueryRow("SELECT COUNT(*) FROM "+c.table+" WHERE message_id IN (?, ?)", ids[0], ids[1]).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (c *commitInDoubt) awaitCut(t *testing.T, want string) {
	t.Helper()
	select {
	case cut := <-c.cutter.Cuts():
		if !strings.Contains(cut, want) {
			t.Fatalf("the cutter did %q; want %q", cut, want)
		}
	case <-time.After(bound):
		t.Fatalf("no COMMIT was cut within %s", bound)
	}
}

// A COMMIT in doubt is found out on a new connection: when the server
// committed and only its answer was lost, Commit returns nil; when the COMMIT
// never reached the server (which rolls back), an error that says it was not
// committed. The monitor hears which.
func TestIntegrationACommitInDoubtIsFoundOut(t *testing.T) {
	c := newCommitInDoubt(t)
	for _, each := range []struct {
		cut     func()
		did     string
		stored  int
		monitor string
	}{
		{c.cutter.LoseNextCommitAnswer, "the answer was lost", 2, "true <nil>"},
		{c.cutter.LoseNextCommit, "lost before it reached the server", 0, "false <nil>"},
	} {
		ids := messageIDs("in-doubt", 2)
		each.cut()
		err := c.outbox.tryCommit(dispatchesTo("orders", ids...)...)
		c.awaitCut(t, each.did)
		if each.stored > 0 && err != nil {
			t.Errorf("%s: Commit returned %v; want nil: the transaction committed", each.did, err)
		}
		if each.stored == 0 && (err == nil || errors.Is(err, ErrCommitUnknown) || !strings.Contains(err.Error(), "it was not committed")) {
			t.Errorf("%s: Commit returned %v; want an error that says it was not committed", each.did, err)
		}
		if n := c.stored(t, ids...); n != each.stored {
			t.Errorf("%s: %d of 2 rows stored; want %d", each.did, n, each.stored)
		}
		if heard := c.monitor.inDoubt[len(c.monitor.inDoubt)-1]; heard != each.monitor {
			t.Errorf("%s: the monitor heard %q; want %q", each.did, heard, each.monitor)
		}
	}
}

// When the database cannot be asked within CommitCheckTimeout, Commit says
// the outcome is unknown, as an outage.
func TestIntegrationACommitInDoubtThatCannotBeCheckedIsUnknown(t *testing.T) {
	c := newCommitInDoubt(t, Options.CommitCheckTimeout(time.Second))
	c.cutter.VanishAtNextCommitAnswer()
	started := time.Now()
	err := c.outbox.tryCommit(dispatchesTo("orders", messageIDs("unknown", 2)...)...)
	c.awaitCut(t, "the database vanished")
	if !errors.Is(err, ErrCommitUnknown) || !messaging.IsOutage(err) {
		t.Fatalf("Commit returned %v; want ErrCommitUnknown, an outage", err)
	}
	if elapsed := time.Since(started); elapsed > bound {
		t.Errorf("Commit took %s; its check is bounded by 1 s", elapsed)
	}
}
