// Command warrenmq is the operator's tool for a service built on this library:
// it lists what the outbox still owes the broker (oldest rows first, with their
// failed attempts and last error), reads and releases the retired rows, and
// runs the broker health probe once; it prints the topology a subscription
// set declares and checks it against a live broker.
//
//	warrenmq outbox pending  [-limit 20] [-driver mysql] [-dsn DSN] [-table Messages]
//	warrenmq outbox retired  [-limit 50] ...
//	warrenmq outbox release  ID [ID ...] ...
//	warrenmq status          [-amqp URL] [-timeout 10s]
//	warrenmq topology plan   [-replication] [-dead-letters=true] QUEUE[=EXCHANGE[:KIND:KEY],...] ...
//	warrenmq topology check  [-amqp URL] [plan flags] QUEUE[=...] ...
//	warrenmq replay          [-amqp URL] [filters] [-limit N] [-dry-run] [-json] QUEUE
//	warrenmq schedule topology [-check] [-amqp URL] [-json]
//	warrenmq queues          [-amqp URL] [-policy P] [-schedule] [-json] QUEUE ...
//	warrenmq console         [-listen 127.0.0.1:7070] [-actions] [-queue Q]... (a web page)
//
// Nothing it prints carries a password: every line, on stdout and stderr,
// errors included, passes through internal/redact with every address the
// command was given (flags and environment).
//
// Exit status: 0 on success, 1 when the operation failed, 2 on bad usage, 3
// when queues finds messages waiting in a dead-letter or parking queue.
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
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	amqp "github.com/rabbitmq/amqp091-go"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/status"
)

// errUsage marks a mistake in how the command was called (exit status 2).
var errUsage = errors.New("usage")

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	// run's error is redacted already; printing it cannot leak.
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	case errors.Is(err, errAttention):
		fmt.Fprintln(os.Stderr, "warrenmq:", err)
		os.Exit(3)
	default:
		fmt.Fprintln(os.Stderr, "warrenmq:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  warrenmq outbox pending  [-limit 20] [-driver mysql|pgx|sqlite] [-dsn DSN] [-table Messages]
  warrenmq outbox retired  [-limit 50] [outbox flags]
  warrenmq outbox release  [outbox flags] ID [ID ...]
  warrenmq status          [-amqp URL] [-timeout 10s]
  warrenmq topology plan   [-replication] [-dead-letters=true] QUEUE[=EXCHANGE[:KIND:KEY],...] ...
  warrenmq topology check  [-amqp URL] [-timeout 10s] [plan flags] QUEUE[=...] ...
  warrenmq replay          [-amqp URL] [-exchange X] [-key K] [-type T] [-error TEXT] [-header N=V]
                           [-limit N] [-deadline D] [-keep-attempts] [-dry-run] [-json] QUEUE
  warrenmq schedule topology [-check] [-amqp URL] [-timeout 10s] [-json]
  warrenmq queues          [-amqp URL] [-policy exponential:6:10s:5m] [-schedule] [-json] QUEUE ...
  warrenmq stream tail     [-amqp URL] [-from next|first|last|OFFSET|TIME|AGO] [-limit N] [-for D] STREAM
  warrenmq console         [-listen 127.0.0.1:7070] [-token T] [-actions] [-amqp URL] [-queue Q]... [-dsn DSN] ...`

// addressVariables are the environment variables that may hold an address
// with a password.
var addressVariables = []string{"WARRENMQ_DSN", "WARRENMQ_AMQP"}

// run runs the command. Everything it writes, and the error it returns, has
// the password of every address it was given masked: the arguments and the
// address variables are all treated as addresses, so nothing depends on which
// flag held one or on the address parsing.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	secrets := append([]string(nil), args...)
	for _, name := range addressVariables {
		secrets = append(secrets, os.Getenv(name))
	}
	stdout, stderr = redacting{stdout, secrets}, redacting{stderr, secrets}
	if err := dispatch(ctx, args, stdout, stderr); err != nil {
		return redact.WithText(err, mask(err.Error(), secrets))
	}
	return nil
}

// mask is redact.Text, and then also masks the pieces of each password that a
// parser quotes when it stops at a reserved character: url.Parse, for one,
// reports "amqp://guest:s3cr" for a password "s3cr#t". Pieces shorter than
// minPiece are left: they would mask ordinary words and reveal little.
func mask(text string, secrets []string) string {
	text = redact.Text(text, secrets...)
	const minPiece = 4
	for _, secret := range secrets {
		password := redact.Password(secret)
		for i := 0; i < len(password); i++ {
			if !strings.ContainsRune("#@:/?%[]", rune(password[i])) {
				continue
			}
			for _, piece := range []string{password[:i], password[i+1:]} {
				if len(piece) >= minPiece {
					text = strings.ReplaceAll(text, piece, redact.Mask)
				}
			}
		}
	}
	return text
}

// redacting masks passwords in everything written through it.
type redacting struct {
	w       io.Writer
	secrets []string
}

func (r redacting) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, mask(string(p), r.secrets)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	case "topology":
		if len(args) < 2 {
			return fmt.Errorf("%w: topology needs plan or check\n%s", errUsage, topologyUsage)
		}
		return runTopology(ctx, args[1], args[2:], stdout, stderr)
	case "replay":
		return runReplay(ctx, args[1:], stdout, stderr)
	case "schedule":
		return runSchedule(ctx, args[1:], stdout, stderr)
	case "queues":
		return runQueues(ctx, args[1:], stdout, stderr)
	case "stream":
		return runStream(ctx, args[1:], stdout, stderr)
	case "console":
		return runConsole(ctx, args[1:], stdout, stderr)
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
	limit := 50
	if verb == "pending" {
		limit = 20
	}
	set.IntVar(&f.limit, "limit", limit, "most rows to list")
	if err := set.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	dialect, err := dialectFor(f.driver)
	if err != nil {
		return err
	}
	db, err := sql.Open(f.driver, f.dsn)
	if err != nil {
		return fmt.Errorf("open the %s database at %s: %w", f.driver, redact.Address(f.dsn), err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("cannot reach the %s database at %s: %w (check -dsn; `make services` starts the local ones)", f.driver, redact.Address(f.dsn), err)
	}
	admin := sqlmq.NewAdmin(db, sqlmq.Options.Dialect(dialect), sqlmq.Options.Table(f.table))

	switch verb {
	case "pending":
		return pending(ctx, admin, f, stdout)
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

// pending prints how many rows wait to be published and the oldest of them,
// with their age, failed attempts and last error.
func pending(ctx context.Context, admin *sqlmq.Admin, f outboxFlags, stdout io.Writer) error {
	n, err := admin.Undispatched(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d message(s) in %s not yet confirmed by the broker\n", n, f.table)
	if n == 0 {
		return nil
	}
	rows, err := admin.Pending(ctx, f.limit)
	if err != nil {
		return err
	}
	now := time.Now()
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tAGE\tATTEMPTS\tMESSAGE ID\tEXCHANGE\tROUTING KEY\tTYPE\tNEXT TRY\tLAST ERROR")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, age(now.Sub(r.Created)), r.Attempts, cell(r.MessageID, 40),
			cell(r.Topic, 30), cell(r.RoutingKey, 30), cell(r.MessageType, 30), nextTry(now, r), cell(r.LastError, 120))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if int64(len(rows)) < n {
		fmt.Fprintf(stdout, "(the oldest %d of %d; -limit shows more)\n", len(rows), n)
	}
	return nil
}

// age is d rounded for reading: 850ms, 42s, 3m10s, 5h2m.
func age(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// nextTry says when a row set aside after a failure is tried again, or who
// holds it.
func nextTry(now time.Time, r sqlmq.PendingMessage) string {
	switch {
	case r.LeaseOwner != "":
		return "held by " + cell(r.LeaseOwner, 40)
	case r.LeaseUntil.IsZero() || !r.LeaseUntil.After(now):
		return "due"
	}
	return "in " + age(r.LeaseUntil.Sub(now))
}

// cell keeps a value on one line of a table and within width bytes.
func cell(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	if len(s) <= width {
		return s
	}
	cut := width
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func dialectFor(driver string) (sqldialect.Dialect, error) {
	switch driver {
	case "mysql":
		return sqldialect.MySQL, nil
	case "pgx", "postgres", "postgresql":
		return sqldialect.PostgreSQL, nil
	case "sqlite":
		return sqldialect.SQLite, nil
	}
	return sqldialect.Dialect{}, fmt.Errorf("%w: unknown -driver %q; use mysql, pgx or sqlite", errUsage, driver)
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	set := flag.NewFlagSet("warrenmq status", flag.ContinueOnError)
	set.SetOutput(stderr)
	address := set.String("amqp", envOr("WARRENMQ_AMQP", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ address")
	timeout := set.Duration("timeout", 10*time.Second, "how long the probe may take")
	if err := set.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if _, err := amqp.ParseURI(*address); err != nil { // its text may quote a piece of the password
		return fmt.Errorf("the -amqp address %s is malformed; write it as amqp://user:password@host:5672/vhost, with reserved characters in the user or password ('#', '@', ':', '/', '?', '%%') percent-encoded", redact.Address(*address))
	}
	transport := rabbitmq.New(rabbitmq.Options.Address(*address), rabbitmq.Options.BrokerTimeout(*timeout))
	defer transport.Close()
	checker := status.New(status.Options.Connector(transport))
	defer checker.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	started := time.Now()
	if err := checker.Probe(ctx); err != nil { // no tolerance window: the answer now
		return fmt.Errorf("broker probe of %s failed: %w", redact.Address(*address), err)
	}
	fmt.Fprintf(stdout, "broker ok at %s: probe confirmed in %s\n", redact.Address(*address), time.Since(started).Round(time.Microsecond))
	return nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
