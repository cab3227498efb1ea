package wait

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestForWaitsTheWholeDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		began := time.Now()
		if err := For(context.Background(), time.Minute); err != nil {
			t.Fatalf("For: %v", err)
		}
		if waited := time.Since(began); waited != time.Minute {
			t.Fatalf("waited %s, want 1m", waited)
		}
	})
}

func TestForEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		began := time.Now()
		if err := For(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("For = %v, want the context's deadline", err)
		}
		if waited := time.Since(began); waited != time.Second {
			t.Fatalf("waited %s, want the context's 1s", waited)
		}
	})
}

func TestForReturnsAtOnceForAnEndedContextOrNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := For(ctx, 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("For on an ended context = %v, want context.Canceled", err)
		}
		began := time.Now()
		if err := For(context.Background(), -time.Second); err != nil || time.Since(began) != 0 {
			t.Fatalf("For(-1s) = %v after %s, want nil at once", err, time.Since(began))
		}
	})
}
