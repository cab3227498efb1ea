package console

import (
	"context"
	"fmt"

	"github.com/warrenmq/messaging/sqlmq"
)

// outboxRows bounds how many pending and retired rows a page lists.
const outboxRows = 100

// OutboxAdmin is what the console asks of an outbox table; *sqlmq.Admin
// (sqlmq.NewAdmin) is one.
type OutboxAdmin interface {
	// Undispatched counts the rows waiting to be published.
	Undispatched(ctx context.Context) (int64, error)
	// Pending lists up to limit waiting rows, oldest first.
	Pending(ctx context.Context, limit int) ([]sqlmq.PendingMessage, error)
	// Retired lists up to limit retired rows, oldest first.
	Retired(ctx context.Context, limit int) ([]sqlmq.RetiredMessage, error)
	// Release puts retired rows back to be published and says how many.
	Release(ctx context.Context, ids ...int64) (int, error)
}

// outboxTable is one configured table.
type outboxTable struct {
	name  string
	admin OutboxAdmin
}

// outboxView is what the outbox page shows of one table.
type outboxView struct {
	Name     string
	Waiting  int64
	Pending  []sqlmq.PendingMessage
	Retired  []sqlmq.RetiredMessage
	Err      string
	Capped   bool // more rows wait than the page lists
	Released string
}

// readOutbox reads one table within ctx.
func (c *Console) readOutbox(ctx context.Context, t outboxTable) outboxView {
	v := outboxView{Name: t.name}
	read := func(ctx context.Context) (outboxView, error) {
		var err error
		if v.Waiting, err = t.admin.Undispatched(ctx); err != nil {
			return v, err
		}
		if v.Pending, err = t.admin.Pending(ctx, outboxRows); err != nil {
			return v, err
		}
		v.Retired, err = t.admin.Retired(ctx, outboxRows)
		return v, err
	}
	got, err := await(c, ctx, fmt.Sprintf("the outbox table %s", t.name), read)
	if err != nil {
		v.Err = c.redactErr(err)
		return v
	}
	got.Capped = got.Waiting > int64(len(got.Pending))
	return got
}

// outbox is the configured table of that name.
func (c *Console) outbox(name string) (outboxTable, bool) {
	for _, t := range c.config.outboxes {
		if t.name == name {
			return t, true
		}
	}
	return outboxTable{}, false
}
