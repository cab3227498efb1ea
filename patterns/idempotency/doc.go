// Package idempotency guards a handler against messages delivered more than
// once, the seed's Idempotency pattern as a messaging.Middleware:
//
//	store, err := idempotency.NewSQLStore(db, sqldialect.PostgreSQL)
//	worker := messaging.Chain(
//		idempotency.New(store),                       // claim, then confirm or release
//		retry.Middleware(retry.Options.Policy(budget)),
//	)(transactional.New(outbox, factory))
//
// Each delivery's key (its message id, or Options.IdempotentBy's) is claimed
// in a Store, which finds it in one of three states: free (Claimed: the
// handler runs), confirmed (Duplicate: accepted, not rejected: the work was
// done) or held by a live claim (InProgress: messaging.InProgress(delay), the
// attempt does not advance and it is never dead-lettered for it). A handler
// that fails has its key released, so the retry runs; a claim has a lease
// (StoreOptions.ClaimTimeout, 5 min), so a crashed holder's key is claimable
// again. It is a guard against duplicates, not exactly-once: a crash between
// the handler's end and the acknowledgement still redelivers a message whose
// key is confirmed or, if Confirm did not happen, whose claim ends with its
// lease.
//
// Rows of the patterns map (ID1-ID20), as built here:
//
//   - ID1 NewMemoryStore(ttl, options...) with Len; ttl <= 0 is one hour;
//     entries older than ttl are swept on each claim; StoreOptions.Clock.
//   - ID2, ID17 New(store, options...) is a messaging.Middleware: one form for
//     both (the seed's Idempotent(store, handle) is New(store)(handle)).
//   - ID3 a duplicate is settled with messaging.Accept.
//   - ID4 a panic, or a settlement other than accept, releases the key; the
//     release error is reported (Monitor.StoreFailed, a WARN line) and
//     otherwise ignored, and the panic goes on outwards.
//   - ID5 ClaimResult: Claimed, Duplicate, InProgress.
//   - ID6, ID8 messaging.InProgress(ctx, delivery, delay): the settlement
//     decorator waits, republishes and counts it as in_progress.
//   - ID7 a failed InProgress republish: the settlement decorator does not
//     acknowledge the batch and the broker redelivers it (the whole batch,
//     not one message).
//   - ID9 a stream consumer refuses InProgress through the settlement
//     decorator's RefuseRetry (the message is parked); nothing here.
//   - ID10 Options.InProgressDelay, DefaultInProgressDelay (5 s).
//   - ID11 DefaultClaimTimeout (5 min), StoreOptions.ClaimTimeout on both
//     stores (a store option, not a setter).
//   - ID12 Store (Claim, Confirm, Release; Claim keeps its bool) and
//     ClaimReporter (TryClaim); a Claim-only store's refusal reads Duplicate.
//   - ID13 a store error on claim is messaging.Retry with the error, as the
//     map says, except an outage (messaging.IsOutage: the database
//     unreachable, a bad connection) or a cancelled context: then the
//     batch's claims are released and Handle panics with the error marked
//     messaging.Outage, so nothing is acknowledged, no attempt is spent and
//     no message is dead-lettered because the store was away.
//   - ID14 the key is confirmed when the handler returned and did not settle
//     the message otherwise (or accepted it through messaging.Accept, even if
//     it panicked after); the confirm error is reported and ignored.
//   - ID15 Options.IdempotentBy(func(message, delivery) string); an empty key
//     is messaging.Reject with messaging.Fatal("acemq: message <id> produced
//     an empty idempotency key").
//   - ID16 the default key is Delivery.MessageID.
//   - ID18 SQLStore.TryClaim: insert-unless-there, else retake an expired
//     unconfirmed claim, else read confirmed. Difference: a driver that cannot
//     report rows affected is an error on the insert too (the seed claims),
//     so the store never guesses.
//   - ID19 Confirm is an UPDATE, Release a DELETE (of an unconfirmed row
//     only: a confirmed key is never forgotten by a late Release), Prune(ctx,
//     olderThan) is yours to schedule.
//   - ID20 SQLStore takes any DB (*sql.Tx included), and InTransaction(store)
//     writes each batch's claims in the batch's own SQL transaction (the one
//     handlers/sqltx or handlers/transactional puts in
//     messaging.TransactionSlotFrom), so the claim, its confirmation and the
//     work commit together: a crash after the commit redelivers a confirmed
//     key (a duplicate, accepted), a crash before it leaves no claim behind.
//     A concurrent copy waits on the row lock for the holder's commit. A
//     failed claim, Confirm or Release in the transaction panics, so the batch
//     rolls back. New keeps the gap stated above.
//
// Rows of the SQL section (SQ1-SQ7) for this store (the schema registry's are
// its own package's):
//
//   - SQ1 DB is ExecContext and QueryRowContext, so *sql.DB, *sql.Conn and
//     *sql.Tx all serve (QueryContext is not needed).
//   - SQ2 SQLStore.Schema returns the DDL and never runs it.
//   - SQ3, SQ4 placeholders through sqldialect.Dialect.Rebind; insert-unless-there
//     is ON CONFLICT DO NOTHING (PostgreSQL, SQLite) or ON DUPLICATE KEY
//     UPDATE on MySQL, where `key` is quoted, times are DATETIME(6) and the
//     index is inline.
//   - SQ5 DefaultTable "acemq_idempotency", StoreOptions.Table.
//   - SQ6 the table (key, handled_at, confirmed) and its handled_at index,
//     from Schema rather than three .sql files; the pre-0.8 migration is in
//     Schema's documentation.
//   - SQ7 tests on MariaDB, PostgreSQL and SQLite (the local services), for
//     the store, New over RabbitMQ and InTransaction.
//
// Batches: keys are claimed per delivery; the inner handler gets the claimed
// messages only, with messaging.WithDeliveries aligned to them; messages found
// in progress are put back one after another once the claimed ones ran (each
// holds the worker for the delay). Keys are per store: consumers of two queues
// that receive the same message id (a fanout) need a table each
// (StoreOptions.Table) or a key that names the queue (Options.IdempotentBy).
//
// The SQL store's dialect bits (placeholders, the quoted `key`, the no-op
// upsert) are written here, over sqldialect.Dialect's values, without changing
// sqlmq.
package idempotency
