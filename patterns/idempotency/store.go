package idempotency

import (
	"context"
	"time"
)

// ClaimResult is what a store found for a key when asked to claim it.
type ClaimResult int

const (
	// Claimed: the key was free (or its holder's lease had ended) and is now
	// held by the caller, who runs the handler and then confirms or releases it.
	Claimed ClaimResult = iota + 1
	// Duplicate: the key was confirmed; the work was done, the message is
	// accepted without running the handler.
	Duplicate
	// InProgress: the key is claimed and its lease has not ended; a handler is
	// still running elsewhere, or one failed and could not release its claim.
	// The message is put back with messaging.InProgress.
	InProgress
)

// String names the result.
func (r ClaimResult) String() string {
	switch r {
	case Claimed:
		return "claimed"
	case Duplicate:
		return "duplicate"
	case InProgress:
		return "in_progress"
	default:
		return "unknown"
	}
}

const (
	// DefaultClaimTimeout is how long a claim that was neither confirmed nor
	// released holds its key: after it, the key is claimable again, so the
	// work of a holder that crashed is not lost.
	DefaultClaimTimeout = 5 * time.Minute
	// DefaultInProgressDelay is how long a message found in progress waits
	// before it is put back on its queue. Keep it well under the claim timeout.
	DefaultInProgressDelay = 5 * time.Second
)

// Store remembers which keys were handled. Claim takes a key: true when the
// caller now holds it, false when it is taken. Confirm records the work as
// done; Release forgets the claim, so a retry runs the work.
//
// A store that implements only Store cannot tell a duplicate from work in
// progress: a refused Claim is read as a duplicate (the message is accepted).
// Implement ClaimReporter as well to tell them apart.
type Store interface {
	Claim(ctx context.Context, key string) (bool, error)
	Confirm(ctx context.Context, key string) error
	Release(ctx context.Context, key string) error
}

// ClaimReporter is a Store that reports which of the three states it found.
// Both stores of this package implement it.
type ClaimReporter interface {
	TryClaim(ctx context.Context, key string) (ClaimResult, error)
}

// claim asks store for key, through TryClaim when it has one.
func claim(ctx context.Context, store Store, key string) (ClaimResult, error) {
	if reporter, ok := store.(ClaimReporter); ok {
		return reporter.TryClaim(ctx, key)
	}
	taken, err := store.Claim(ctx, key)
	switch {
	case err != nil:
		return 0, err
	case taken:
		return Claimed, nil
	default:
		return Duplicate, nil
	}
}
