package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/warrenmq/messaging/sqlmq"
)

// releaseReport is what outbox release -json prints.
type releaseReport struct {
	Table       string  `json:"table"`
	Requested   int     `json:"requested"`
	Released    int     `json:"released"`
	NotReleased []int64 `json:"not_released"`
	Seconds     float64 `json:"seconds"`
	Error       string  `json:"error,omitempty"`
}

// releaseBatch is how many rows -all releases per statement.
const releaseBatch = 500

// release puts the retired rows ids (every retired row when ids is nil)
// back to be published, showing its progress, and says which ids were no
// retired rows (errNotFound, exit status 4).
func release(ctx context.Context, admin *sqlmq.Admin, f outboxFlags, ids []int64, stdout, stderr io.Writer) error {
	bar := startProgress(stderr, f.progress, "release from "+f.table, "rows", "released", len(ids))
	defer bar.stop() // also on a panic; stop may be called again
	report := releaseReport{Table: f.table, Requested: len(ids), NotReleased: []int64{}}
	var err error
	if f.all {
		err = releaseAll(ctx, admin, f, bar, &report)
	} else {
		err = releaseEach(ctx, admin, f, ids, bar, &report)
	}
	bar.stop()
	report.Seconds = bar.elapsed().Seconds()
	if err != nil {
		report.Error = err.Error()
	}
	if f.asJSON {
		if jsonErr := writeJSON(stdout, report); jsonErr != nil {
			return jsonErr
		}
	} else if f.all && report.Requested == 0 && err == nil {
		fmt.Fprintf(stdout, "no retired messages in %s\n", f.table)
	} else {
		fmt.Fprintf(stdout, "released %d of %d row(s) in %s; a running relay publishes them within its sweep interval\n",
			report.Released, report.Requested, age(bar.elapsed()))
	}
	switch {
	case err != nil:
		return fmt.Errorf("release stopped after %d of %d row(s): %w", report.Released, report.Requested, err)
	case len(report.NotReleased) > 0:
		return fmt.Errorf("%w: %d of %d row(s) not released: %s is not a retired row of %s (no such id, or the row is pending or already published); `warrenmq outbox retired` lists the retired rows",
			errNotFound, len(report.NotReleased), report.Requested, joinIDs(report.NotReleased, 10), f.table)
	}
	return nil
}

// releaseEach releases the ids one by one, so that the ones that are no
// retired rows can be named.
func releaseEach(ctx context.Context, admin *sqlmq.Admin, f outboxFlags, ids []int64, bar *progress, report *releaseReport) error {
	for _, id := range ids {
		call, cancel := context.WithTimeout(ctx, f.timeout)
		n, err := admin.Release(call, id)
		cancel()
		if err != nil {
			return err
		}
		if n == 0 {
			report.NotReleased = append(report.NotReleased, id)
			bar.skipped.Add(1)
			continue
		}
		report.Released += n
		bar.done.Add(int64(n))
	}
	return nil
}

// releaseAll releases every retired row, releaseBatch at a time, oldest
// first. A row that retires again while it runs (its cause not fixed) is
// not released twice: each listing only takes rows above the last released.
func releaseAll(ctx context.Context, admin *sqlmq.Admin, f outboxFlags, bar *progress, report *releaseReport) error {
	var highest int64
	for {
		call, cancel := context.WithTimeout(ctx, f.timeout)
		rows, err := admin.Retired(call, releaseBatch)
		if err != nil {
			cancel()
			return err
		}
		ids := make([]int64, 0, len(rows))
		for _, r := range rows {
			if r.ID > highest {
				ids = append(ids, r.ID)
				highest = r.ID
			}
		}
		if len(ids) == 0 {
			cancel()
			return nil
		}
		n, err := admin.Release(call, ids...)
		cancel()
		if err != nil {
			return err
		}
		report.Requested += len(ids)
		report.Released += n
		bar.done.Add(int64(n))
		bar.skipped.Add(int64(len(ids) - n)) // published or released by someone else meanwhile
	}
}

const outboxSchemaUsage = `usage:
  warrenmq outbox schema [-dialect mysql|postgres|sqlite] [-table Messages] [-format sql|goose] [-down]

Prints the DDL of the outbox table and its indexes (sqlmq.TableSchema), each
created only when missing, for teams that apply schema changes with a
migration tool instead of sqlmq.CreateSchema: save it as a golang-migrate
NNN_outbox.up.sql or an atlas versioned migration, or print it in goose's
form with -format goose. -down prints what undoes it (DROP TABLE). Connects to
nothing.`

// runOutboxSchema prints the outbox table's DDL.
func runOutboxSchema(args []string, stdout, stderr io.Writer) error {
	set := flag.NewFlagSet("warrenmq outbox schema", flag.ContinueOnError)
	dialectName := set.String("dialect", envOr("WARRENMQ_DRIVER", "mysql"), "SQL dialect: mysql (MariaDB too), postgres or sqlite")
	table := set.String("table", envOr("WARRENMQ_TABLE", sqlmq.DefaultTable), "outbox table")
	format := set.String("format", "sql", "sql (plain statements) or goose (with its Up and Down annotations)")
	down := set.Bool("down", false, "print the statement that drops the table instead")
	if err := parseFlags(set, args, outboxSchemaUsage, stdout, stderr); err != nil {
		return err
	}
	if set.NArg() != 0 {
		return fmt.Errorf("%w: outbox schema takes no arguments\n%s", errUsage, outboxSchemaUsage)
	}
	dialect, err := dialectNamed("-dialect", *dialectName)
	if err != nil {
		return err
	}
	up, err := sqlmq.TableSchema(dialect, *table)
	if err != nil {
		return fmt.Errorf("%w: -table: %v", errUsage, err)
	}
	drop := fmt.Sprintf("DROP TABLE IF EXISTS %s;\n", *table)
	up = strings.TrimRight(up, "\n") + "\n"
	switch {
	case *format == "goose":
		_, err = fmt.Fprintf(stdout, "-- +goose Up\n%s\n-- +goose Down\n%s", up, drop)
	case *format != "sql":
		return fmt.Errorf("%w: -format %q; use sql or goose", errUsage, *format)
	case *down:
		_, err = io.WriteString(stdout, drop)
	default:
		_, err = io.WriteString(stdout, up)
	}
	return err
}
