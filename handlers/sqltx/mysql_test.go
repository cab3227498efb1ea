package sqltx

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

// TestMariaDBCommitAndRollback runs the handler against the local MariaDB: a
// successful batch is visible afterwards, a panicking one leaves nothing behind.
func TestMariaDBCommitAndRollback(t *testing.T) {
	db := testenv.MySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	table := fmt.Sprintf("sqltx_%s", messaging.NewID()[:8])
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (message varchar(64) NOT NULL) ENGINE=InnoDB"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })

	fail := false
	handler := New(db, func(tx *sql.Tx) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			for _, m := range messages {
				if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (message) VALUES (?)", m); err != nil {
					panic(err)
				}
			}
			if fail {
				panic("handler broke")
			}
		})
	}, Options.IsolationLevel(sql.LevelReadCommitted))

	handler.Handle(ctx, "committed-1", "committed-2")

	fail = true
	recovered := func() (r any) {
		defer func() { r = recover() }()
		handler.Handle(ctx, "rolled-back")
		return nil
	}()
	if recovered != "handler broke" {
		t.Fatalf("recovered %v, want the handler's own panic value", recovered)
	}

	var committed, rolledBack int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE message LIKE 'committed-%'").Scan(&committed); err != nil {
		t.Fatalf("count committed: %v", err)
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE message = 'rolled-back'").Scan(&rolledBack); err != nil {
		t.Fatalf("count rolled back: %v", err)
	}
	if committed != 2 || rolledBack != 0 {
		t.Fatalf("committed rows %d (want 2), rolled-back rows %d (want 0)", committed, rolledBack)
	}
}
