package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/sqlmq"
)

const outboxUsage = `usage:
  warrenmq outbox pending  [-limit 20] [-json] [outbox flags]
  warrenmq outbox retired  [-limit 50] [-json] [outbox flags]
  warrenmq outbox release  [-all] [-json] [-progress auto|bar|lines|none] [outbox flags] [ID ...]
  warrenmq outbox schema   [-dialect mysql|postgres|sqlite] [-table Messages] [-format sql|goose] [-down]

outbox flags: -driver mysql|pgx|sqlite (WARRENMQ_DRIVER), -dsn DSN (WARRENMQ_DSN),
-table Messages (WARRENMQ_TABLE), -timeout 30s (the bound of each database call).

pending lists the rows not yet confirmed by the broker, oldest first, with
their age, failed attempts, next try and last error. retired lists the rows
the relay gave up on. release puts retired rows back to be published (the
ids given, or every retired row with -all), showing its progress on stderr.
schema prints the outbox table's DDL (CREATE ... IF NOT EXISTS) for a
migration tool, connecting to nothing.
Exit status: 0 on success; 1 when the database failed; 2 on bad usage; 4 when
an ID given to release is not a retired row.`

// outboxFlags are the flags the outbox verbs share, and theirs.
type outboxFlags struct {
	driver, dsn, table, progress string
	limit                        int
	timeout                      time.Duration
	asJSON, all                  bool
}

func runOutbox(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	switch verb {
	case "pending", "retired", "release":
	case "schema":
		return runOutboxSchema(args, stdout, stderr)
	default:
		if isHelp(verb) {
			fmt.Fprintln(stdout, outboxUsage)
			return errHelp
		}
		return fmt.Errorf("%w: unknown outbox command %q\n%s", errUsage, verb, outboxUsage)
	}
	f, set, err := parseOutboxFlags(verb, args, stdout, stderr)
	if err != nil {
		return err
	}
	db, admin, err := openOutbox(ctx, f)
	if err != nil {
		return err
	}
	defer db.Close()
	switch verb {
	case "pending":
		return pending(ctx, admin, f, stdout)
	case "retired":
		return retired(ctx, admin, f, stdout)
	}
	ids, err := releaseIDs(set.Args(), f.all)
	if err != nil {
		return err
	}
	return release(ctx, admin, f, ids, stdout, stderr)
}

func parseOutboxFlags(verb string, args []string, stdout, stderr io.Writer) (outboxFlags, *flag.FlagSet, error) {
	var f outboxFlags
	set := flag.NewFlagSet("warrenmq outbox "+verb, flag.ContinueOnError)
	set.StringVar(&f.driver, "driver", envOr("WARRENMQ_DRIVER", "mysql"), "database/sql driver: mysql, pgx or sqlite")
	set.StringVar(&f.dsn, "dsn", envOr("WARRENMQ_DSN", "root@tcp(127.0.0.1:3306)/test?parseTime=true"), "data source name")
	set.StringVar(&f.table, "table", envOr("WARRENMQ_TABLE", sqlmq.DefaultTable), "outbox table")
	set.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound of each database call")
	set.BoolVar(&f.asJSON, "json", false, "print one JSON document")
	switch verb {
	case "pending":
		set.IntVar(&f.limit, "limit", 20, "most rows to list")
	case "retired":
		set.IntVar(&f.limit, "limit", 50, "most rows to list")
	case "release":
		set.BoolVar(&f.all, "all", false, "release every retired row")
		set.StringVar(&f.progress, "progress", progressAuto, "progress on stderr: auto (a bar on a terminal, lines otherwise), bar, lines or none")
	}
	if err := parseFlags(set, args, outboxUsage, stdout, stderr); err != nil {
		return f, nil, err
	}
	if f.progress != "" {
		if err := checkProgressMode(f.progress); err != nil {
			return f, nil, err
		}
	}
	if verb != "release" && set.NArg() != 0 {
		return f, nil, fmt.Errorf("%w: outbox %s takes no arguments\n%s", errUsage, verb, outboxUsage)
	}
	return f, set, nil
}

// openOutbox opens and pings the database of f and returns an Admin over its
// outbox table; the caller closes the database.
func openOutbox(ctx context.Context, f outboxFlags) (*sql.DB, *sqlmq.Admin, error) {
	dialect, err := dialectFor(f.driver)
	if err != nil {
		return nil, nil, err
	}
	db, err := sql.Open(f.driver, f.dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open the %s database at %s: %w", f.driver, redact.Address(f.dsn), err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("cannot reach the %s database at %s: %w (check -dsn; `make services` starts the local ones)", f.driver, redact.Address(f.dsn), err)
	}
	return db, sqlmq.NewAdmin(db, sqlmq.Options.Dialect(dialect), sqlmq.Options.Table(f.table)), nil
}

// pendingRow is one pending row as -json prints it.
type pendingRow struct {
	ID         int64      `json:"id"`
	MessageID  string     `json:"message_id"`
	Exchange   string     `json:"exchange"`
	RoutingKey string     `json:"routing_key"`
	Type       string     `json:"type"`
	Created    time.Time  `json:"created"`
	AgeSeconds float64    `json:"age_seconds"`
	Attempts   int        `json:"attempts"`
	LastError  string     `json:"last_error"`
	LeaseOwner string     `json:"lease_owner"`
	LeaseUntil *time.Time `json:"lease_until"`
}

// pending prints how many rows wait to be published and the oldest of them,
// with their age, failed attempts and last error.
func pending(ctx context.Context, admin *sqlmq.Admin, f outboxFlags, stdout io.Writer) error {
	call, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	n, err := admin.Undispatched(call)
	if err != nil {
		return err
	}
	var rows []sqlmq.PendingMessage
	if n > 0 {
		if rows, err = admin.Pending(call, f.limit); err != nil {
			return err
		}
	}
	now := time.Now()
	if f.asJSON {
		listed := make([]pendingRow, 0, len(rows))
		for _, r := range rows {
			row := pendingRow{ID: r.ID, MessageID: r.MessageID, Exchange: r.Topic, RoutingKey: r.RoutingKey, Type: r.MessageType,
				Created: r.Created.UTC(), AgeSeconds: now.Sub(r.Created).Seconds(), Attempts: r.Attempts, LastError: r.LastError, LeaseOwner: r.LeaseOwner}
			if !r.LeaseUntil.IsZero() {
				until := r.LeaseUntil.UTC()
				row.LeaseUntil = &until
			}
			listed = append(listed, row)
		}
		return writeJSON(stdout, map[string]any{"table": f.table, "pending": n, "rows": listed})
	}
	fmt.Fprintf(stdout, "%d message(s) in %s not yet confirmed by the broker\n", n, f.table)
	if n == 0 {
		return nil
	}
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

// retiredRow is one retired row as -json prints it.
type retiredRow struct {
	ID         int64     `json:"id"`
	MessageID  string    `json:"message_id"`
	Exchange   string    `json:"exchange"`
	RoutingKey string    `json:"routing_key"`
	Type       string    `json:"type"`
	Created    time.Time `json:"created"`
	Retired    time.Time `json:"retired"`
	Attempts   int       `json:"attempts"`
	LastError  string    `json:"last_error"`
}

// retired lists the rows the relay gave up on.
func retired(ctx context.Context, admin *sqlmq.Admin, f outboxFlags, stdout io.Writer) error {
	call, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rows, err := admin.Retired(call, f.limit)
	if err != nil {
		return err
	}
	if f.asJSON {
		listed := make([]retiredRow, 0, len(rows))
		for _, r := range rows {
			listed = append(listed, retiredRow{ID: r.ID, MessageID: r.MessageID, Exchange: r.Topic, RoutingKey: r.RoutingKey, Type: r.MessageType,
				Created: r.Created.UTC(), Retired: r.Retired.UTC(), Attempts: r.Attempts, LastError: r.LastError})
		}
		return writeJSON(stdout, map[string]any{"table": f.table, "rows": listed})
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
}

// releaseIDs reads the ids to release; none with -all.
func releaseIDs(args []string, all bool) ([]int64, error) {
	switch {
	case all && len(args) > 0:
		return nil, fmt.Errorf("%w: give -all or row ids, not both", errUsage)
	case !all && len(args) == 0:
		return nil, fmt.Errorf("%w: release needs the ids of retired rows (see `warrenmq outbox retired`), or -all", errUsage)
	}
	ids := make([]int64, 0, len(args))
	for _, arg := range args {
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("%w: %q is not a row id", errUsage, arg)
		}
		ids = append(ids, id)
	}
	return ids, nil
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

// joinIDs is ids as "7, 9, 12", the first max of them.
func joinIDs(ids []int64, most int) string {
	parts := make([]string, 0, min(len(ids), most)+1)
	for i, id := range ids {
		if i == most {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(ids)-most))
			break
		}
		parts = append(parts, strconv.FormatInt(id, 10))
	}
	return strings.Join(parts, ", ")
}
