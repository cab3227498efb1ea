package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
)

// ErrNoTransaction is what InTransaction panics with (marked messaging.Fatal)
// when the batch's context carries no SQL transaction: it was not put inside
// handlers/sqltx.Middleware or handlers/transactional.Middleware over an
// outbox.
var ErrNoTransaction = errors.New("idempotency: InTransaction found no SQL transaction in the handler's context; put it inside handlers/sqltx.Middleware (or handlers/transactional.Middleware over an sqlmq outbox)")

// InTransaction is Middleware with every claim written in the batch's own SQL
// transaction, the one the handler does its work in
// (messaging.TransactionSlotFrom(ctx).Tx, which handlers/sqltx and
// handlers/transactional fill):
//
//	worker := messaging.Chain(
//		retry.Middleware(retry.Options.Policy(budget)),
//		sqltx.Middleware(db),
//		idempotency.InTransaction(store), // store: NewSQLStore(db, dialect)
//	)(handle) // handle writes through the same transaction
//
// The claim, its confirmation and the work commit together or not at all, so
// the gap Middleware leaves is closed: a crash after the commit and before the
// acknowledgement redelivers a message whose key is already confirmed (a
// duplicate, accepted), and a crash before the commit leaves neither the work
// nor a claim (the redelivery runs the handler, with no lease to wait out). A
// concurrent copy of a message being handled waits on the database's row lock
// for the holder's transaction to end, and then finds it confirmed, or free.
//
// The batch's keys are claimed with one statement in the transaction, each
// written as confirmed work: the commit is the confirmation, so a batch
// whose keys are all new costs its transaction one statement and nothing at
// the end; a message the handler did not accept has its row deleted before
// the commit, so its retry runs.
//
// store gives the table, dialect and lease; its own database handle is not
// used. A claim that fails panics at once, and a Release that fails panics
// after the batch ran, so the transaction rolls back and the batch runs
// again, rather than committing work whose claim says otherwise. SQLite
// allows one writing transaction at a time: the workers then take turns.
func InTransaction(store *SQLStore, options ...Option) messaging.Middleware {
	c := newConfig(options)
	return func(inner messaging.Handler) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			slot := messaging.TransactionSlotFrom(ctx)
			if slot == nil || slot.Tx == nil {
				panic(messaging.Fatal(ErrNoTransaction))
			}
			batch := *store
			batch.db = slot.Tx
			batch.ownTx = store.prepared != nil && opens(store.prepared.db, slot.Tx)
			tx := &txStore{SQLStore: &batch}
			(&handler{inner: inner, store: tx, config: c}).Handle(ctx, messages...)
			if err := tx.failure(); err != nil {
				panic(fmt.Errorf("idempotency: the claims of this batch could not be settled in its transaction, so the batch is rolled back and will be redelivered: %w", err))
			}
		})
	}
}

// txStore is a SQLStore over one batch's transaction. Its claims are
// written as confirmed work, so one statement per batch both claims and
// confirms (the commit is the confirmation, a rollback forgets both);
// Release deletes the caller's own row, confirmed or not, and a failed
// Release is remembered: in a transaction, it failing means the commit would
// not match the work.
type txStore struct {
	*SQLStore
	mu     sync.Mutex
	failed error
}

// TryClaim is TryClaimAll of one key.
func (s *txStore) TryClaim(ctx context.Context, key string) (Claim, error) {
	claims, err := s.TryClaimAll(ctx, []string{key})
	if err != nil {
		return Claim{}, err
	}
	return claims[0], nil
}

// TryClaimAll fails the batch when the claim fails: after a failed statement
// (a deadlock, a lock wait that timed out) the transaction may be unusable,
// so the batch is rolled back and run again rather than its other messages
// handled in it. A key the store refuses (messaging.Fatal) is the message's
// alone and is returned. The claims need no renewal: until the commit the
// database's row locks hold them.
func (s *txStore) TryClaimAll(ctx context.Context, keys []string) ([]Claim, error) {
	claims, err := s.SQLStore.claimAll(ctx, keys, true)
	switch {
	case err == nil:
		for i := range claims {
			claims[i].Lease = 0
		}
		return claims, nil
	case messaging.IsFatal(err):
		return nil, err
	case messaging.IsOutage(err):
		panic(messaging.Outage(err))
	}
	panic(fmt.Errorf("idempotency: the claim in the batch's transaction failed, so the batch is rolled back: %w", err))
}

// Confirm has nothing left to do: the claim was written confirmed, and the
// batch's commit makes it so.
func (s *txStore) Confirm(context.Context, Claim) error { return nil }

// ConfirmAll is Confirm of each claim.
func (s *txStore) ConfirmAll(context.Context, []Claim) []error { return nil }

// Release deletes the caller's own row of the key, so the retry of a message
// the handler did not accept runs.
func (s *txStore) Release(ctx context.Context, c Claim) error {
	_, err := s.exec(ctx, "release", c.Key, s.releaseOwn, c.Key, c.Owner)
	return s.remember(err)
}

func (s *txStore) remember(err error) error {
	if err != nil {
		s.mu.Lock()
		s.failed = errors.Join(s.failed, err)
		s.mu.Unlock()
	}
	return err
}

func (s *txStore) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
