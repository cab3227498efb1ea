package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging/sqldialect"
)

// DB is what the SQL registry needs of a database: sqldialect.DB, and
// QueryContext for the lists. *sql.DB, *sql.Conn and *sql.Tx all have it.
type DB interface {
	sqldialect.DB
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// registerAttempts bounds Register's loop: each pass loses only to another
// registration that took the next version with a different definition, so
// this is far more than contention between services starting together needs.
const registerAttempts = 64

// SQLRegistry keeps schemas in a table shared by every process that uses it,
// on MySQL/MariaDB, PostgreSQL or SQLite, in the table layout of the other
// AceMQ libraries. Registration is safe from any number of processes at once:
// the table's unique keys decide, so each distinct definition of a subject
// gets one version and every registrant of it the same answer. It is safe for
// concurrent use when db is.
type SQLRegistry struct {
	db      DB
	dialect sqldialect.Dialect
	table   string
	monitor Monitor

	insert, latestVersion, byID, byVersion, byFingerprint, latest, versions string
}

// NewSQLRegistry returns a registry over db in dialect (sqldialect.MySQL,
// sqldialect.PostgreSQL or sqldialect.SQLite); Options.Table and Monitor apply.
// It creates nothing: apply Schema with your migrations, or call CreateTable.
// The error is a table name that is not a plain identifier.
func NewSQLRegistry(db DB, dialect sqldialect.Dialect, options ...Option) (*SQLRegistry, error) {
	c := newConfig(options)
	if err := sqldialect.CheckTable("schema", c.table); err != nil {
		return nil, err
	}
	r := &SQLRegistry{db: db, dialect: dialect, table: c.table, monitor: c.monitor}
	t := r.table
	ignore := dialect.IgnoreDuplicate("id")
	columns := "id, subject, version, format, definition, fingerprint, registered_at"
	r.insert = dialect.Rebind("INSERT INTO " + t + " (subject, version, format, definition, fingerprint, registered_at) VALUES (?, ?, ?, ?, ?, ?)" + ignore)
	r.latestVersion = dialect.Rebind("SELECT COALESCE(MAX(version), 0) FROM " + t + " WHERE subject = ?")
	r.byID = dialect.Rebind("SELECT " + columns + " FROM " + t + " WHERE id = ?")
	r.byVersion = dialect.Rebind("SELECT " + columns + " FROM " + t + " WHERE subject = ? AND version = ?")
	r.byFingerprint = dialect.Rebind("SELECT " + columns + " FROM " + t + " WHERE subject = ? AND fingerprint = ?")
	r.latest = dialect.Rebind("SELECT " + columns + " FROM " + t + " WHERE subject = ? ORDER BY version DESC LIMIT 1")
	r.versions = dialect.Rebind("SELECT " + columns + " FROM " + t + " WHERE subject = ? ORDER BY version")
	return r, nil
}

var _ Registry = (*SQLRegistry)(nil)

// Register adds definition to subject as its next version, or returns the
// version with its fingerprint. It reads the subject's highest version and
// inserts the next one unless either key is taken; then it reads the row with
// the fingerprint back. A row that is not there means another definition took
// that version first, and it tries the next.
func (r *SQLRegistry) Register(ctx context.Context, subject, format, definition string) (Schema, error) {
	if err := check(subject, format, definition); err != nil {
		return Schema{}, err
	}
	fingerprint := Fingerprint(definition)
	var lastErr error
	for range registerAttempts {
		existing, err := r.one(ctx, r.byFingerprint, subject, fingerprint)
		if err == nil {
			r.monitor.Registered(subject, existing.Version, false)
			return existing, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return Schema{}, r.failed("register a schema for subject", subject, err)
		}
		var latest int
		if err := r.db.QueryRowContext(ctx, r.latestVersion, subject).Scan(&latest); err != nil {
			return Schema{}, r.failed("read the latest version of subject", subject, err)
		}
		result, err := r.db.ExecContext(ctx, r.insert, subject, latest+1, format, definition, fingerprint, r.dialect.Time(time.Now()))
		if err != nil {
			// A deadlock between two inserts, or a conflict a driver reports
			// as an error: the next pass reads what won.
			lastErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if n, err := result.RowsAffected(); err == nil && n == 1 {
			if created, err := r.one(ctx, r.byFingerprint, subject, fingerprint); err == nil {
				r.monitor.Registered(subject, created.Version, true)
				return created, nil
			}
		}
	}
	if lastErr == nil {
		lastErr = errors.New("other registrations kept taking the next version")
	}
	if ctx.Err() != nil {
		lastErr = errors.Join(lastErr, ctx.Err())
	}
	return Schema{}, fmt.Errorf("schema: could not register a definition for subject %q in %s after %d attempts; try again: %w", subject, r.table, registerAttempts, lastErr)
}

// ByID returns the schema with id.
func (r *SQLRegistry) ByID(ctx context.Context, id int64) (Schema, error) {
	s, err := r.one(ctx, r.byID, id)
	if errors.Is(err, sql.ErrNoRows) {
		r.monitor.NotFound("")
		return Schema{}, notFoundID(id)
	}
	if err != nil {
		return Schema{}, fmt.Errorf("schema: read the schema with id %d from %s: %w", id, r.table, err)
	}
	return s, nil
}

// ByVersion returns subject's version.
func (r *SQLRegistry) ByVersion(ctx context.Context, subject string, version int) (Schema, error) {
	return r.lookup(ctx, subject, "read a version of subject", notFoundVersion(subject, version), r.byVersion, subject, version)
}

// ByFingerprint returns subject's version with fingerprint.
func (r *SQLRegistry) ByFingerprint(ctx context.Context, subject, fingerprint string) (Schema, error) {
	return r.lookup(ctx, subject, "read a fingerprint of subject", notFoundFingerprint(subject, fingerprint), r.byFingerprint, subject, fingerprint)
}

// Latest returns subject's highest version.
func (r *SQLRegistry) Latest(ctx context.Context, subject string) (Schema, error) {
	return r.lookup(ctx, subject, "read the latest version of subject", notFoundSubject(subject), r.latest, subject)
}

// lookup reads the one schema of subject that query finds: none is heard by
// the monitor and returned as notFound, any other failure says what failed.
func (r *SQLRegistry) lookup(ctx context.Context, subject, what string, notFound error, query string, args ...any) (Schema, error) {
	s, err := r.one(ctx, query, args...)
	if errors.Is(err, sql.ErrNoRows) {
		r.monitor.NotFound(subject)
		return Schema{}, notFound
	}
	if err != nil {
		return Schema{}, r.failed(what, subject, err)
	}
	return s, nil
}

// Versions returns every version of subject, oldest first.
func (r *SQLRegistry) Versions(ctx context.Context, subject string) ([]Schema, error) {
	rows, err := r.db.QueryContext(ctx, r.versions, subject)
	if err != nil {
		return nil, r.failed("read the versions of subject", subject, err)
	}
	defer rows.Close()
	var all []Schema
	for rows.Next() {
		s, err := r.scan(rows.Scan)
		if err != nil {
			return nil, r.failed("read the versions of subject", subject, err)
		}
		all = append(all, s)
	}
	if err := rows.Err(); err != nil {
		return nil, r.failed("read the versions of subject", subject, err)
	}
	if len(all) == 0 {
		r.monitor.NotFound(subject)
		return nil, notFoundSubject(subject)
	}
	return all, nil
}

func (r *SQLRegistry) one(ctx context.Context, query string, args ...any) (Schema, error) {
	return r.scan(r.db.QueryRowContext(ctx, query, args...).Scan)
}

func (r *SQLRegistry) scan(scan func(...any) error) (Schema, error) {
	var s Schema
	var at sqldialect.Timestamp
	if err := scan(&s.ID, &s.Subject, &s.Version, &s.Format, &s.Definition, &s.Fingerprint, &at); err != nil {
		return Schema{}, err
	}
	s.RegisteredAt = at.Time
	return s, nil
}

func (r *SQLRegistry) failed(what, subject string, err error) error {
	return fmt.Errorf("schema: %s %q in %s: %w", what, subject, r.table, err)
}
