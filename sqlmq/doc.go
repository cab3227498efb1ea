// Package sqlmq is the transactional outbox. Its Connector's CommitWriter stores
// dispatches as rows in the caller's SQL transaction (MySQL/MariaDB,
// PostgreSQL or SQLite), so a handler's own writes and the messages it sends
// commit together or not at all; its dispatch processor publishes the committed
// rows through the transport, mandatory and confirmed, in commit order, and
// marks each row dispatched only after the broker confirmed it. Delivery is at
// least once: a crash between confirm and mark publishes the row again.
//
// A row stores everything needed to publish the same bytes and properties
// later, so a row recovered after a restart, or by another instance, publishes
// exactly what the live path would have.
//
// Commit stores its rows with as few statements as the dialect allows (one
// multi-row INSERT on MySQL/MariaDB and PostgreSQL, batches on SQLite),
// prepared once per size and pooled connection. It never waits on the broker
// or the processor: once SQL has committed it hands the rows to the
// processor's channel if there is room, and otherwise leaves them in the
// table, from where the processor publishes them, in order, once it has
// caught up (reading them a page at a time without locks: they are leased to
// it). Confirmed pages are marked dispatched on a goroutine of their own while
// the next page is published.
//
// No row holds up the others. A row that can never travel on AMQP is retired
// before it is published; a batch that fails in a way one row may have caused
// is published again in halves; a row whose own publish failed (the broker
// refused or nacked it, or it failed alone for a reason that is not an
// outage) is set aside with its attempts and last error, tried again after
// its RetryPolicy's delay, and retired when the policy gives up. An outage
// (broker unreachable, publishing paused, a connection lost under a publish)
// counts nothing: the rows wait in order, or are set aside uncounted. Retired rows are kept, listed by
// Admin.Retired and released by Admin.Release; Admin.Pending shows the rows
// waiting and why. Nothing is deleted unpublished; dispatched rows are pruned
// after Retention.
//
// Several instances may share one table: rows are claimed with a lease (SELECT
// ... FOR UPDATE SKIP LOCKED on MySQL and PostgreSQL), and a periodic sweep
// publishes rows whose lease expired, such as those of an instance that died.
//
// The outbox never creates its table by itself: call CreateSchema at start
// (it creates what is missing, and nothing when all is there), or apply
// Schema (or TableSchema), written CREATE ... IF NOT EXISTS, with your
// migrations. Times in the table are microseconds since the Unix epoch, so the
// outbox does not depend on a driver's time parsing or the server's time zone.
//
// What the outbox fixes at store time: MessageID (messaging.NewID when empty),
// FirstSeen and Timestamp (now when zero). Every row is published mandatory:
// a message that reaches no queue stays in the outbox, counted as a failed
// publish of the row, unless Options.DropUnroutable names its exchange. Header
// values must be what an AMQP table carries (a nested map[string]any is stored
// as an amqp091.Table); names in the reserved x-acemq- namespace are refused.
// Write refuses, with messaging.ErrWireLimit, any dispatch whose fields AMQP
// cannot carry (short strings over 255 bytes, a payload over MaxPayload), so
// nothing unpublishable is ever stored.
// A Dispatch with an empty Origin gets the publishing transport's default, so
// instances sharing a table should configure the same origin.
//
// On SQLite, open the database with a busy timeout (for modernc.org/sqlite,
// "?_pragma=busy_timeout(10000)"), because writers and the processor take
// turns on the one write lock.
//
// A CommitWriter opened with WithTransaction(ctx, tx) joins tx, a transaction
// of the caller's, instead of beginning one: Commit and Rollback of tx stay
// the caller's.
//
// Connection.Writer (as opposed to CommitWriter) commits every Write in a
// transaction of its own; Connection.Reader fails with ErrCannotRead.
package sqlmq
