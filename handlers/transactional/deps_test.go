package transactional

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A service on PostgreSQL must not link the MySQL driver because it decorates
// its handlers: the decorators classify a lost database through the root
// taxonomy, which knows the drivers' errors by their shape.
func TestTheDecoratorsAndTheirMetricsLinkNoDatabaseDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-deps",
		"github.com/warrenmq/messaging/handlers/...", "github.com/warrenmq/messaging/monitoring/prometheus").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, driver := range []string{"github.com/go-sql-driver/mysql", "github.com/jackc/pgx", "modernc.org/sqlite"} {
		if strings.Contains(string(out), driver) {
			t.Errorf("the handler decorators or their metrics import %s", driver)
		}
	}
}
