package retrypolicy

import (
	"errors"
	"testing"
	"time"
)

func TestWithAttemptsKeepsTheWaits(t *testing.T) {
	p := Exponential(4, time.Second, 3*time.Second).WithAttempts(6)
	if p.MaxAttempts() != 6 || len(p.Schedule()) != 5 || p.Schedule()[4] != 3*time.Second {
		t.Fatalf("WithAttempts(6) of an exponential policy: %v %v", p, p.Schedule())
	}
	if n := None().WithAttempts(3); n.MaxAttempts() != 3 || n.Schedule()[1] != 0 {
		t.Fatalf("None().WithAttempts(3) tries three times without waiting: %v", n.Schedule())
	}
	bad := Fixed(2, time.Second).WithAttempts(0)
	if bad.MaxAttempts() != 1 || !errors.Is(bad.Err(), ErrInvalid) {
		t.Fatalf("WithAttempts(0) is recorded and read as 1: %v %v", bad.MaxAttempts(), bad.Err())
	}
}
