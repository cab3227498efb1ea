package idempotency

import (
	"context"
	"errors"
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
	// released, nor renewed, holds its key: after it, the key is claimable
	// again, so the work of a holder that crashed is not lost.
	DefaultClaimTimeout = 5 * time.Minute
	// DefaultInProgressDelay is how long a message found in progress waits
	// before it is put back on its queue. Keep it well under the claim timeout.
	DefaultInProgressDelay = 5 * time.Second
)

// Claim is a store's answer to TryClaim: what it found for Key and, when
// Result is Claimed, the caller's hold on the key.
//
// A claim is fenced by its Owner token: Renew, Confirm and Release act only on
// a claim that still carries it. A holder whose lease ran out, and whose key
// another delivery of the message then took, can neither release nor confirm
// the newer claim: it finds its own claim gone (ErrClaimLost).
type Claim struct {
	// Key is the key that was claimed.
	Key string
	// Result is the state the store found the key in.
	Result ClaimResult
	// Owner identifies this claim among every claim ever made of Key; set
	// when Result is Claimed.
	Owner string
	// Lease is how long the claim holds the key without a renewal (the
	// store's claim timeout). The guard renews it while the handler runs, every
	// third of it, so a handler that runs longer than the lease keeps its key.
	// Zero means the claim needs no renewal (a claim in a transaction is held
	// by the database's row lock until the commit).
	Lease time.Duration
}

// ErrClaimLost is what Renew and Confirm return for a claim that is no longer
// the caller's: its lease ended and another delivery of the message took the
// key, or the claim is gone (released, pruned). The caller's work may then be
// done twice; the guard counts it (Monitor.ClaimLost) and logs it.
var ErrClaimLost = errors.New("idempotency: the claim is no longer this delivery's: its lease ended and another delivery of the message took the key")

// Store remembers which keys were handled, and who holds the ones being
// handled. TryClaim takes a key; Renew extends the caller's lease while its
// handler runs; Confirm records the work as done; Release forgets the claim,
// so a retry runs the work. Renew, Confirm and Release act only on the claim
// they are given (its Owner): Renew and Confirm return ErrClaimLost when it
// is no longer held, Release does nothing then.
//
// Both stores of this package implement it; a store of your own must fence
// the same way, or a holder whose lease ran out releases or confirms a claim
// another delivery took after it.
type Store interface {
	TryClaim(ctx context.Context, key string) (Claim, error)
	Renew(ctx context.Context, claim Claim) error
	Confirm(ctx context.Context, claim Claim) error
	Release(ctx context.Context, claim Claim) error
}
