// Package schema is a registry of message schemas per subject: a message
// carries a small identifier and consumers look its schema up, so a producer
// can add a field without every consumer being redeployed the same
// afternoon.
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
// The SQL registry (NewSQLRegistry(db, dialect, options...)) keeps the table
// acemq_schemas (Options.Table) on MySQL/MariaDB, PostgreSQL or SQLite, in the
// other AceMQ libraries' layout plus a unique index on (subject, version),
// which is what makes registration from several processes at once give one
// version per distinct definition. CreateTable creates what is missing (that
// index too, on a table another library made); Schema returns the same DDL
// for a migration tool. db is anything with ExecContext, QueryContext and
// QueryRowContext, so a *sql.Tx works (on PostgreSQL a registration that
// loses a race inside your transaction aborts it; register outside one at
// start-up). Lookups beyond ByID, Latest and Versions: ByVersion and
// ByFingerprint. A subject over 255 bytes or a format over 64 (the table's
// columns) is refused by both registries alike.
//
// Register on the SQL registry reads the subject's highest version and
// inserts the next one unless either unique key is taken, then reads the row
// with its fingerprint back; when another definition took that version first
// it tries the next (at most 64 times, each pass lost to a registration that
// succeeded). Monitor counts registrations (new or existing) and lookups that
// found nothing.
package schema
