package streams

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

// projection is the doc's example: each order is applied and the stream's
// offset saved in one SQL transaction, so the pair is effectively once.
type projection struct {
	db                 *sql.DB
	orders, checkpoint string

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
			_, err = tx.ExecContext(ctx, "INSERT INTO "+p.checkpoint+" (name, next_offset) VALUES ('projection-a', ?) "+
				"ON DUPLICATE KEY UPDATE next_offset = VALUES(next_offset)", offset+1)
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

// from is where the next run starts: one past the saved checkpoint, or the
// whole stream the first time.
func (p *projection) from(ctx context.Context) (Offset, error) {
	var next uint64
	err := p.db.QueryRowContext(ctx, "SELECT next_offset FROM "+p.checkpoint+" WHERE name = 'projection-a'").Scan(&next)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return FromFirst(), nil
	case err != nil:
		return Offset{}, err
	}
	return FromOffset(next), nil
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
	p := &projection{db: db, orders: "stream_orders_" + suffix, checkpoint: "stream_checkpoints_" + suffix, applied: map[string]int{}, handed: map[string]int{}, changed: make(chan struct{}, 1)}
	for _, ddl := range []string{
		"CREATE TABLE " + p.orders + " (id VARCHAR(64) PRIMARY KEY)",
		"CREATE TABLE " + p.checkpoint + " (name VARCHAR(64) PRIMARY KEY, next_offset BIGINT UNSIGNED NOT NULL)",
	} {
		if _, err := db.Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + p.orders + ", " + p.checkpoint) })

	run := func(until int) {
		ctx := context.Background()
		from, err := p.from(ctx)
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
