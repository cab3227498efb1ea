// Package wait holds the one in-process wait of the decorators and the
// runtime (a retry's backoff, a settlement's delay, a reconnect delay): a
// timer that a context can end early. Tests make its time pass at once by
// running in a testing/synctest bubble; there is no clock to replace.
package wait

import (
	"context"
	"time"
)

// For waits d, or until ctx ends, whichever comes first. It returns ctx's
// error when ctx ended before the wait was over (at once when it already
// had), and nil otherwise; a d of zero or less does not wait.
func For(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
