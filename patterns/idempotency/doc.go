// Package idempotency guards a handler against messages delivered more than
// once, as a messaging.Middleware:
//
//	store, err := idempotency.NewSQLStore(db, sqldialect.PostgreSQL)
//	worker := messaging.Chain(
//		idempotency.Middleware(store), // claim, then confirm or release
//		retry.Middleware(retry.Options.Policy(budget)),
//	)(transactional.New(outbox, factory))
//
// Each delivery's key (its message id, or Options.IdempotentBy's) is claimed
// in a Store, which finds it in one of three states: free (Claimed: the
// handler runs), confirmed (Duplicate: accepted, not rejected: the work was
// done) or held by a live claim (InProgress: messaging.InProgress(delay), the
// attempt does not advance and it is never dead-lettered for it). A handler
// that fails has its key released, so the retry runs.
//
// A claim has a lease (StoreOptions.ClaimTimeout, 5 min), so a crashed
// holder's key is claimable again, and it is fenced: it carries an owner
// token, and Renew, Confirm and Release act only on the caller's own claim.
// While the handler runs, the guard renews its claims every third of the lease, so
// a handler that runs longer than the lease (a slow batch, one that retry
// holds through an outage) keeps its key and no second copy runs beside it.
// If a renewal cannot reach the store until the lease ends and another
// delivery takes the key, the first holder can no longer release or confirm
// the newer claim: the store refuses it (ErrClaimLost), and the guard counts it
// (Monitor.ClaimLost) and logs it.
//
// Middleware is a guard against duplicates, not exactly-once: a crash between the
// handler's end and the acknowledgement still redelivers a message whose key
// is confirmed or, if Confirm did not happen, whose claim ends with its lease.
// InTransaction closes that gap: it writes each batch's claims in the batch's
// own SQL transaction (the one handlers/sqltx or handlers/transactional puts
// in messaging.TransactionSlotFrom), so the claim, its confirmation and the
// work commit together, and a concurrent copy waits on the row lock for the
// holder's commit.
//
// Stores: NewMemoryStore(ttl) for tests and one worker; NewSQLStore(db,
// dialect) over MySQL/MariaDB, PostgreSQL or SQLite, in the table layout the
// other AceMQ libraries use (acemq_idempotency: key, handled_at, confirmed)
// plus the owner column claimed_by. CreateTable creates what is missing of it
// (safe on every start); Schema returns the same DDL for a migration tool.
// Prune(ctx, olderThan) is yours to schedule.
//
// Batches: the SQL store claims a batch's keys with one statement and
// confirms them with one more (BatchStore; a store without it is called key
// by key); the inner handler gets the claimed messages only, with
// messaging.WithDeliveries aligned to them; messages found in progress are
// put back one after another once the claimed ones ran (each holds the
// worker for the delay). Keys are per store: consumers of two queues
// that receive the same message id (a fanout) need a table each
// (StoreOptions.Table) or a key that names the queue (Options.IdempotentBy).
//
// See doc/patterns-idempotency.md.
package idempotency
