package sqlmq

import (
	"strings"
	"testing"

	"github.com/warrenmq/messaging/sqldialect"
)

func TestStatementsSplitEveryDialectsSchemaWithoutComments(t *testing.T) {
	for _, d := range []sqldialect.Dialect{sqldialect.MySQL, sqldialect.PostgreSQL, sqldialect.SQLite} {
		statements := Statements(Schema(d))
		if len(statements) < 2 {
			t.Fatalf("%s: want the table and its indexes, got %d statement(s)", d, len(statements))
		}
		if !strings.HasPrefix(statements[0], "CREATE TABLE") {
			t.Errorf("%s: first statement %.40q should create the table", d, statements[0])
		}
		for _, s := range statements {
			if strings.Contains(s, "--") || strings.Contains(s, ";") || s != strings.TrimSpace(s) {
				t.Errorf("%s: statement not clean: %q", d, s)
			}
		}
	}
}
