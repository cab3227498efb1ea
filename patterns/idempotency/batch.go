package idempotency

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/warrenmq/messaging"
)

// BatchStore is a Store that claims, and confirms, the keys of a whole batch
// in one call each, so a batch costs the store a statement or two rather
// than two per message. The guard uses it when its store has it (the SQL
// store does) and calls TryClaim and Confirm key by key otherwise.
//
// TryClaimAll answers for every key, in the order of keys, with the same
// states, owners and leases TryClaim gives; a key that appears twice is
// claimed once and its later copies are InProgress (the first copy holds
// it). Its error is the whole call's: nothing was claimed. ConfirmAll
// confirms the caller's own claims and returns nil when all were confirmed,
// or one error per claim in the order of claims (nil for each one
// confirmed, ErrClaimLost for one no longer held).
type BatchStore interface {
	Store
	TryClaimAll(ctx context.Context, keys []string) ([]Claim, error)
	ConfirmAll(ctx context.Context, claims []Claim) []error
}

// TryClaimAll claims keys together: one INSERT of every key, each as an
// unconfirmed claim carrying the batch's new owner token, that leaves the
// keys already there as they are. When it inserted every key (the usual
// case) that is all; otherwise one SELECT of the batch's keys tells which
// are confirmed (Duplicate) and which held by a live claim (InProgress), and
// a claim whose lease ended is retaken, key by key, with the batch's token.
// A batch of more than 1,000 keys takes a statement (or two) per 1,000.
// A key longer than MaxKeyLength fails the whole call, as TryClaim's
// messaging.Fatal error.
func (s *SQLStore) TryClaimAll(ctx context.Context, keys []string) ([]Claim, error) {
	return s.claimAll(ctx, keys, false)
}

// ConfirmAll confirms the caller's claims with one UPDATE per owner token (a
// batch claimed by TryClaimAll has one) and 1,000 keys; a statement that
// confirmed fewer rows than it was given is followed by a SELECT that tells
// which claims are lost. A claim its owner already confirmed counts as
// confirmed.
func (s *SQLStore) ConfirmAll(ctx context.Context, claims []Claim) []error {
	var errs []error
	fail := func(i int, err error) {
		if errs == nil {
			errs = make([]error, len(claims))
		}
		errs[i] = err
	}
	for owner, all := range byOwner(claims) {
		for start := 0; start < len(all); start += maxKeysPerStatement {
			indexes := all[start:min(start+maxKeysPerStatement, len(all))]
			for i, err := range s.confirmChunk(ctx, owner, claims, indexes) {
				if err != nil {
					fail(indexes[i], err)
				}
			}
		}
	}
	return errs
}

// confirmChunk confirms the claims at indexes, all of owner, with one
// UPDATE, and returns nil or one error per index.
func (s *SQLStore) confirmChunk(ctx context.Context, owner string, claims []Claim, indexes []int) []error {
	keys := make([]string, len(indexes))
	for j, i := range indexes {
		keys[j] = claims[i].Key
	}
	errs := make([]error, len(indexes))
	if owner == "" { // no claim of this store: nothing of the caller's to confirm
		for j, key := range keys {
			errs[j] = fmt.Errorf("idempotency: confirm key %q in %s: %w", key, s.table, ErrClaimLost)
		}
		return errs
	}
	args := append([]any{s.dialect.Time(time.Now().UTC()), owner}, stringArgs(keys)...)
	n, err := s.exec(ctx, "confirm", describe(keys), s.keysQuery(s.confirmAll, len(keys), ""), args...)
	if err == nil && n == int64(len(keys)) {
		return nil
	}
	found := make(map[string]rowState, len(keys))
	if err == nil {
		err = s.states(ctx, keys, false, found)
	}
	for j, key := range keys {
		switch row, ok := found[key]; {
		case err != nil:
			errs[j] = err
		case !ok || row.owner != owner || !row.confirmed:
			errs[j] = fmt.Errorf("idempotency: confirm key %q in %s: %w", key, s.table, ErrClaimLost)
		}
	}
	return errs
}

// claimAll is TryClaimAll; confirmed writes the claims as confirmed work
// (InTransaction, whose commit is the confirmation).
func (s *SQLStore) claimAll(ctx context.Context, keys []string, confirmed bool) ([]Claim, error) {
	for _, key := range keys {
		if err := s.checkKey(key); err != nil {
			return nil, err
		}
	}
	claims := make([]Claim, len(keys))
	unique := make([]string, 0, len(keys))
	seen := make(map[string]bool, len(keys))
	for i, key := range keys {
		if seen[key] { // the batch's first copy holds it
			claims[i] = Claim{Key: key, Result: InProgress}
			continue
		}
		seen[key] = true
		unique = append(unique, key)
	}
	if len(unique) == 0 {
		return claims, nil
	}
	// Rows are locked in the order of the VALUES: batches that share keys
	// take them in one order, so they wait for each other rather than
	// deadlock.
	slices.Sort(unique)
	now := time.Now().UTC()
	owner := messaging.NewID()
	mine := Claim{Result: Claimed, Owner: owner, Lease: s.lease}
	found := make(map[string]rowState, len(unique))
	for start := 0; start < len(unique); start += maxKeysPerStatement {
		chunk := unique[start:min(start+maxKeysPerStatement, len(unique))]
		inserted, err := s.exec(ctx, "claim", describe(chunk), s.insertQuery(len(chunk), confirmed), s.insertArgs(chunk, now, owner)...)
		if err != nil {
			return nil, err
		}
		if inserted == int64(len(chunk)) {
			for _, key := range chunk {
				found[key] = rowState{owner: owner}
			}
			continue
		}
		if err := s.states(ctx, chunk, confirmed, found); err != nil {
			return nil, err
		}
	}
	for i, key := range keys {
		if claims[i].Result != 0 {
			continue
		}
		result, err := s.settle(ctx, key, found, now, owner, confirmed)
		if err != nil {
			return nil, err
		}
		claims[i] = Claim{Key: key, Result: result}
		if result == Claimed {
			claims[i] = mine
			claims[i].Key = key
		}
	}
	return claims, nil
}

// maxKeysPerStatement bounds the keys of one statement, within every
// dialect's limit on a statement's placeholders (PostgreSQL and MySQL take
// 65,535, SQLite 32,766): a larger batch is claimed and confirmed in chunks.
const maxKeysPerStatement = 1000

// settle tells what the claim of key found, from its row as the batch's
// SELECT read it: the batch's own claim, confirmed work, a live claim, or a
// claim whose lease ended, which it retakes. A row gone (released between
// the statements) is InProgress: the next look finds it free.
func (s *SQLStore) settle(ctx context.Context, key string, found map[string]rowState, now time.Time, owner string, confirmed bool) (ClaimResult, error) {
	row, ok := found[key]
	switch {
	case !ok:
		return InProgress, nil
	case row.owner == owner:
		return Claimed, nil
	case row.confirmed:
		return Duplicate, nil
	case !row.expired:
		return InProgress, nil
	}
	query := s.reclaim
	if confirmed {
		query = s.reclaimConfirmed
	}
	retaken, err := s.exec(ctx, "claim", key, query, s.dialect.Time(now), owner, key, s.dialect.Time(now.Add(-s.lease)))
	if err != nil {
		return 0, err
	}
	if retaken == 1 {
		return Claimed, nil
	}
	return InProgress, nil // another delivery retook or confirmed it first
}

// rowState is a key's row as a SELECT of the batch's keys read it.
type rowState struct {
	owner     string
	confirmed bool
	expired   bool // unconfirmed and older than the lease
}

// querier is what states needs beyond DB for one SELECT of many keys;
// *sql.DB, *sql.Conn and *sql.Tx have it. A DB without it is read key by
// key.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// states reads the rows of keys into found: owner, confirmed, and whether
// an unconfirmed claim's lease ended. locked reads them FOR UPDATE on MySQL,
// whose plain reads in a transaction see its first snapshot, not the rows
// the batch's INSERT waited for.
func (s *SQLStore) states(ctx context.Context, keys []string, locked bool, found map[string]rowState) error {
	suffix := ""
	if locked && s.dialect.IsMySQL() {
		suffix = " FOR UPDATE"
	}
	cutoff := s.dialect.Time(time.Now().UTC().Add(-s.lease))
	q, many := s.db.(querier)
	if !many {
		for _, key := range keys {
			var key2 string
			var row rowState
			err := s.db.QueryRowContext(ctx, s.keysQuery(s.lookupAll, 1, suffix), cutoff, key).Scan(&key2, &row.owner, &row.confirmed, &row.expired)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return fmt.Errorf("idempotency: read key %q in %s: %w", key, s.table, err)
			default:
				found[key] = row
			}
		}
		return nil
	}
	rows, err := q.QueryContext(ctx, s.keysQuery(s.lookupAll, len(keys), suffix), append([]any{cutoff}, stringArgs(keys)...)...)
	if err != nil {
		return fmt.Errorf("idempotency: read keys %s in %s: %w", describe(keys), s.table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var row rowState
		if err := rows.Scan(&key, &row.owner, &row.confirmed, &row.expired); err != nil {
			return fmt.Errorf("idempotency: read keys %s in %s: %w", describe(keys), s.table, err)
		}
		found[key] = row
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("idempotency: read keys %s in %s: %w", describe(keys), s.table, err)
	}
	return nil
}

// insertQuery is the INSERT of n claims that leaves keys already there as
// they are (and so reports the rows it inserted).
func (s *SQLStore) insertQuery(n int, confirmed bool) string {
	row := "(?, ?, FALSE, ?)"
	if confirmed {
		row = "(?, ?, TRUE, ?)"
	}
	var b strings.Builder
	b.Grow(len(s.insertHead) + n*(len(row)+2) + 64)
	b.WriteString(s.insertHead)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(s.dialect.IgnoreDuplicate(s.keyColumn()))
	return s.dialect.Rebind(b.String())
}

func (s *SQLStore) insertArgs(keys []string, now time.Time, owner string) []any {
	at := s.dialect.Time(now)
	args := make([]any, 0, 3*len(keys))
	for _, key := range keys {
		args = append(args, key, at, owner)
	}
	return args
}

// keysQuery is head followed by a list of n placeholders, ")" and suffix.
func (s *SQLStore) keysQuery(head string, n int, suffix string) string {
	var b strings.Builder
	b.Grow(len(head) + 3*n + len(suffix) + 1)
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('?')
	}
	b.WriteByte(')')
	b.WriteString(suffix)
	return s.dialect.Rebind(b.String())
}

// byOwner groups the indexes of claims by their owner token.
func byOwner(claims []Claim) map[string][]int {
	groups := make(map[string][]int, 1)
	for i, c := range claims {
		groups[c.Owner] = append(groups[c.Owner], i)
	}
	return groups
}

func stringArgs(keys []string) []any {
	args := make([]any, len(keys))
	for i, key := range keys {
		args[i] = key
	}
	return args
}

// describe names keys in an error: the key itself, or how many and the first.
func describe(keys []string) string {
	if len(keys) == 1 {
		return keys[0]
	}
	return fmt.Sprintf("%s and %d more", shorten(keys[0]), len(keys)-1)
}
