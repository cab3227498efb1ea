// Package schema is a registry of message schemas per subject, the seed's
// Schema registry pattern: a message carries a small identifier and consumers
// look its schema up, so a producer can add a field without every consumer
// being redeployed the same afternoon.
//
//	registry, err := schema.NewSQLRegistry(db, sqldialect.PostgreSQL)
//	s, err := registry.Register(ctx, "order.placed", "avro", definition)
//	// s.ID travels with the message; a consumer calls registry.ByID(ctx, id)
//
// Definitions are fingerprinted (SHA-256 of the exact bytes), so a service
// registering on start-up adds no version per restart; a lookup that finds
// nothing returns ErrSchemaNotFound, never a zero Schema. NewMemoryRegistry
// shares nothing between processes: use the SQL one for anything real.
//
// Rows of the patterns map, as built here:
//
//   - SR1 NewMemoryRegistry(options...) *MemoryRegistry.
//   - SR2 Register(ctx, subject, format, definition) (Schema, error).
//   - SR3 Fingerprint: SHA-256 hex of the exact bytes (whitespace counts);
//     re-registering a subject's fingerprint returns the existing version.
//   - SR4 Version per subject from 1, ID global; the Registry interface has
//     ByID, Latest and Versions (oldest first), and, beyond the seed,
//     ByVersion(subject, version) and ByFingerprint(subject, fingerprint).
//   - SR5 ErrSchemaNotFound, "acemq: no such schema", wrapped "... with id
//     %d", "... for subject %q" (and "... at version %d", "... with
//     fingerprint %s"). Versions of an unknown subject is not found too.
//   - SR6 ErrInvalidSchema, "acemq: a schema needs a subject and a
//     definition". Beyond the seed, a subject over 255 bytes or a format over
//     64 (the table's columns) is refused by both registries alike.
//   - SR7 NewSQLRegistry(db, dialect, options...) over MySQL/MariaDB,
//     PostgreSQL or SQLite, table acemq_schemas (Options.Table), DDL from
//     (*SQLRegistry).Schema, never run by the library. Difference on purpose:
//     beside UNIQUE (subject, fingerprint) the table has UNIQUE (subject,
//     version), which is what makes registration from several processes at
//     once give one version per distinct definition (without it, two new
//     definitions registered together can both become the same version);
//     add it to a table another AceMQ library created. MySQL's definition is
//     LONGTEXT (TEXT stops at 64 KiB) and its subject is compared byte for
//     byte (utf8mb4_bin), as on the other databases.
//   - SR8 the Avro framing (0x00 and a 4-byte big-endian id) belongs to an
//     Avro codec, which this module does not have yet; Schema.ID is what it
//     would carry.
//   - SQ1 DB is ExecContext, QueryContext and QueryRowContext, so a *sql.Tx
//     works (on PostgreSQL a registration that loses a race inside your
//     transaction aborts it; register outside one at start-up).
//   - SQ2 Schema() returns the DDL; SQ3/SQ4 the dialect's placeholders
//     (sqldialect.Dialect.Rebind) and its insert-unless-there (ON CONFLICT DO
//     NOTHING; ON DUPLICATE KEY UPDATE id = id on MySQL; this table has no
//     reserved word to quote, and its time is DATETIME(6) on MySQL); SQ5 the
//     AceMQ table name; SQ6 is the idempotency table's, not this one's; SQ7 the tests run on MariaDB, PostgreSQL and SQLite, with
//     8 goroutines in each of 2 processes registering the same 10
//     definitions.
//
// Register on the SQL registry reads the subject's highest version and
// inserts the next one unless either unique key is taken, then reads the row
// with its fingerprint back; when another definition took that version first
// it tries the next (at most 64 times, each pass lost to a registration that
// succeeded). Monitor counts registrations (new or existing) and lookups that
// found nothing.
package schema
