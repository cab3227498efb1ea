package streams

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/sqldialect"
)

// projection is the doc's example: each order is applied and the stream's
// offset saved in one SQL transaction, so the pair is effectively once.
type projection struct {
	db          *sql.DB
	orders      string
	checkpoints *Checkpoints

	mu      sync.Mutex
	applied map[string]int // committed, by id
	handed  map[string]int // handed to the projection, by id
	changed chan struct{}
}

func (p *projection) Handle(ctx context.Context, _ ...any) {
	for _, d := range messaging.DeliveriesFrom(ctx) {
		p.mu.Lock()
		p.handed[d.MessageID]++
		p.mu.Unlock()
		offset, ok := OffsetOf(d)
		if !ok {
			panic(fmt.Errorf("message %s carries no stream offset", d.MessageID))
		}
		tx, err := p.db.BeginTx(ctx, nil)
		if err != nil {
			panic(err)
		}
		if _, err = tx.ExecContext(ctx, "INSERT INTO "+p.orders+" (id) VALUES (?)", d.MessageID); err == nil {
			err = p.checkpoints.Save(ctx, tx, "projection-a", offset+1)
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			_ = tx.Rollback()
			panic(err)
		}
		p.mu.Lock()
		p.applied[d.MessageID]++
		p.mu.Unlock()
		select {
		case p.changed <- struct{}{}:
		default:
		}
	}
}

func (p *projection) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.applied)
}

// TestAProjectionRestartedFromItsCheckpointHasNoGapAndNoRepeat: a first run
// applies 40 orders and stops; 60 more are appended; a second run (a new
// Read, as after a restart) starts one past the saved offset and applies
// exactly the 60, each once.
func TestAProjectionRestartedFromItsCheckpointHasNoGapAndNoRepeat(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	db := testenv.MySQL(t)
	transport, stream := brokerStream(t, url, "checkpoint", Retention{MaxAge: 24 * time.Hour})
	suffix := strings.ReplaceAll(stream[len(stream)-8:], "-", "")
	checkpoints, err := NewCheckpoints(db, sqldialect.MySQL, CheckpointOptions.Table("stream_checkpoints_"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	p := &projection{db: db, orders: "stream_orders_" + suffix, checkpoints: checkpoints, applied: map[string]int{}, handed: map[string]int{}, changed: make(chan struct{}, 1)}
	if err := checkpoints.CreateTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE " + p.orders + " (id VARCHAR(64) PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + p.orders + ", stream_checkpoints_" + suffix) })

	run := func(until int) {
		ctx := context.Background()
		from, err := checkpoints.From(ctx, "projection-a", FromFirst())
		if err != nil {
			t.Fatal(err)
		}
		r, err := Read(ctx, transport, stream, p, Options.From(from), Options.Name("projection-a"), Options.Logger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		deadline := time.NewTimer(20 * time.Second)
		defer deadline.Stop()
		for p.count() < until {
			select {
			case <-p.changed:
			case <-deadline.C:
				t.Fatalf("%d of %d orders applied", p.count(), until)
			}
		}
	}
	publish(t, transport, stream, ids("order", 0, 40)...)
	run(40)
	publish(t, transport, stream, ids("order", 40, 100)...)
	run(100)

	var rows int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + p.orders).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids("order", 0, 100) {
		if p.applied[id] != 1 || p.handed[id] != 1 {
			t.Fatalf("%s handed %d times, applied %d times", id, p.handed[id], p.applied[id])
		}
	}
	if rows != 100 || len(p.applied) != 100 {
		t.Fatalf("%d rows, %d orders applied; want 100 each", rows, len(p.applied))
	}
}

// The checkpoint table on MariaDB, PostgreSQL and SQLite: CreateTable twice
// over, From before anything was saved, Save and Save again (an upsert), and
// a Save in a transaction rolled back leaves the last committed offset.
func TestCheckpointsOnEachDatabase(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (*sql.DB, sqldialect.Dialect){
		"MariaDB":    func(t *testing.T) (*sql.DB, sqldialect.Dialect) { return testenv.MySQL(t), sqldialect.MySQL },
		"PostgreSQL": func(t *testing.T) (*sql.DB, sqldialect.Dialect) { return testenv.Postgres(t), sqldialect.PostgreSQL },
		"SQLite": func(t *testing.T) (*sql.DB, sqldialect.Dialect) {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "checkpoints.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db, sqldialect.SQLite
		},
	} {
		t.Run(name, func(t *testing.T) {
			db, dialect := open(t)
			table := "checkpoints_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
			c, err := NewCheckpoints(db, dialect, CheckpointOptions.Table(table))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for range 2 {
				if err := c.CreateTable(ctx); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
			mustStartAt := func(want Offset) {
				t.Helper()
				got, err := c.From(ctx, "projection-a", FromFirst())
				if err != nil || got != want {
					t.Fatalf("From = %v, %v; want %v", got, err, want)
				}
			}
			mustStartAt(FromFirst())
			for _, next := range []uint64{41, 1 << 40} {
				if err := c.Save(ctx, nil, "projection-a", next); err != nil {
					t.Fatal(err)
				}
				mustStartAt(FromOffset(next))
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Save(ctx, tx, "projection-a", 7); err != nil {
				t.Fatal(err)
			}
			_ = tx.Rollback()
			mustStartAt(FromOffset(1 << 40))
		})
	}
}
