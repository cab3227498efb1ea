package sqlmq

import (
	"strings"
	"testing"

	"github.com/warrenmq/messaging/sqldialect"
)

func TestStatementsSplitEveryDialectsSchemaWithoutComments(t *testing.T) {
	for _, d := range []sqldialect.Dialect{sqldialect.MySQL, sqldialect.PostgreSQL, sqldialect.SQLite} {
		statements := Statements(Schema(d))
		want := 3 // the table and its two indexes
		if d.IsMySQL() {
			want = 1 // the indexes are declared in the table
		}
		if len(statements) != want {
			t.Fatalf("%s: want %d statement(s), got %d", d, want, len(statements))
		}
		if !strings.HasPrefix(statements[0], "CREATE TABLE IF NOT EXISTS") {
			t.Errorf("%s: first statement %.40q should create the table when it is missing", d, statements[0])
		}
		for _, s := range statements {
			if strings.Contains(s, "--") || strings.Contains(s, ";") || s != strings.TrimSpace(s) {
				t.Errorf("%s: statement not clean: %q", d, s)
			}
		}
	}
}
