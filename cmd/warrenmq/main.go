// Command warrenmq is the operator's tool for a service built on this library:
// it reads and releases the outbox's retired rows, counts what the outbox still
// owes the broker, and runs the broker health probe once.
//
//	warrenmq outbox pending  [-driver mysql] [-dsn DSN] [-table Messages]
//	warrenmq outbox retired  [-limit 50] ...
//	warrenmq outbox release  ID [ID ...] ...
//	warrenmq status          [-amqp URL] [-timeout 10s]
//
// Exit status: 0 on success, 1 when the operation failed, 2 on bad usage.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/status"
)

// errUsage marks a mistake in how the command was called (exit status 2).
var errUsage = errors.New("usage")

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "warrenmq:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  warrenmq outbox pending  [-driver mysql|pgx|sqlite] [-dsn DSN] [-table Messages]
  warrenmq outbox retired  [-limit 50] [outbox flags]
  warrenmq outbox release  [outbox flags] ID [ID ...]
  warrenmq status          [-amqp URL] [-timeout 10s]`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command\n%s", errUsage, usage)
	}
	switch args[0] {
	case "outbox":
		if len(args) < 2 {
			return fmt.Errorf("%w: outbox needs pending, retired or release\n%s", errUsage, usage)
		}
		return runOutbox(ctx, args[1], args[2:], stdout, stderr)
	case "status":
		return runStatus(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q\n%s", errUsage, args[0], usage)
}

type outboxFlags struct {
	driver, dsn, table string
	limit              int
}

func runOutbox(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	var f outboxFlags
	set := flag.NewFlagSet("warrenmq outbox "+verb, flag.ContinueOnError)
	set.SetOutput(stderr)
	set.StringVar(&f.driver, "driver", envOr("WARRENMQ_DRIVER", "mysql"), "database/sql driver: mysql, pgx or sqlite")
	set.StringVar(&f.dsn, "dsn", envOr("WARRENMQ_DSN", "root@tcp(127.0.0.1:3306)/test?parseTime=true"), "data source name")
	set.StringVar(&f.table, "table", envOr("WARRENMQ_TABLE", "Messages"), "outbox table")
	set.IntVar(&f.limit, "limit", 50, "most retired rows to list")
	if err := set.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	dialect, err := dialectFor(f.driver)
	if err != nil {
		return err
	}
	db, err := sql.Open(f.driver, f.dsn)
	if err != nil {
		return fmt.Errorf("open %s database: %w", f.driver, err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("cannot reach the %s database: %w (check -dsn; `make services` starts the local ones)", f.driver, err)
	}
	admin := sqlmq.NewAdmin(db, sqlmq.Options.Dialect(dialect), sqlmq.Options.Table(f.table))

	switch verb {
	case "pending":
		n, err := admin.Undispatched(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d message(s) in %s not yet confirmed by the broker\n", n, f.table)
		return nil
	case "retired":
		rows, err := admin.Retired(ctx, f.limit)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			fmt.Fprintf(stdout, "no retired messages in %s\n", f.table)
			return nil
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tMESSAGE ID\tEXCHANGE\tROUTING KEY\tTYPE\tATTEMPTS\tRETIRED\tLAST ERROR")
		for _, r := range rows {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.MessageID, r.Topic, r.RoutingKey, r.MessageType,
				r.Attempts, r.Retired.UTC().Format(time.RFC3339), r.LastError)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "release with: warrenmq outbox release ID ... (fix the cause first, or they retire again)")
		return nil
	case "release":
		if set.NArg() == 0 {
			return fmt.Errorf("%w: release needs the ids of retired rows (see `warrenmq outbox retired`)", errUsage)
		}
		ids := make([]int64, 0, set.NArg())
		for _, arg := range set.Args() {
			id, err := strconv.ParseInt(arg, 10, 64)
			if err != nil || id <= 0 {
				return fmt.Errorf("%w: %q is not a row id", errUsage, arg)
			}
			ids = append(ids, id)
		}
		n, err := admin.Release(ctx, ids...)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "released %d of %d row(s); a running relay publishes them within its sweep interval\n", n, len(ids))
		return nil
	}
	return fmt.Errorf("%w: unknown outbox command %q\n%s", errUsage, verb, usage)
}

func dialectFor(driver string) (sqlmq.Dialect, error) {
	switch driver {
	case "mysql":
		return sqlmq.MySQL, nil
	case "pgx", "postgres", "postgresql":
		return sqlmq.PostgreSQL, nil
	case "sqlite":
		return sqlmq.SQLite, nil
	}
	return sqlmq.Dialect{}, fmt.Errorf("%w: unknown -driver %q; use mysql, pgx or sqlite", errUsage, driver)
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	set := flag.NewFlagSet("warrenmq status", flag.ContinueOnError)
	set.SetOutput(stderr)
	address := set.String("amqp", envOr("WARRENMQ_AMQP", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ address")
	timeout := set.Duration("timeout", 10*time.Second, "how long the probe may take")
	if err := set.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	transport := rabbitmq.New(rabbitmq.Options.Address(*address), rabbitmq.Options.BrokerTimeout(*timeout))
	defer transport.Close()
	checker := status.New(status.Options.Connector(transport))
	defer checker.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	started := time.Now()
	if err := checker.Probe(ctx); err != nil { // no tolerance window: the answer now
		return fmt.Errorf("broker probe failed: %w", err)
	}
	fmt.Fprintf(stdout, "broker ok: probe confirmed in %s\n", time.Since(started).Round(time.Microsecond))
	return nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
