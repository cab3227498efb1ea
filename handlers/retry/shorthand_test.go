package retry

import (
	"testing"
	"time"

	"github.com/warrenmq/messaging/retrypolicy"
)

// The option table of smarty/messaging v4's retry (Backoff, MaxBackoff,
// JitterFactor, MaxAttempts) builds one Policy like any other.
func TestTheCoreShorthandsBuildAPolicy(t *testing.T) {
	c := newConfig([]Option{Options.Backoff(time.Second), Options.MaxBackoff(time.Minute), Options.MaxAttempts(3), Options.JitterFactor(0.5)})
	want := retrypolicy.Exponential(3, time.Second, time.Minute).WithJitter(0.5)
	if c.policy != want {
		t.Fatalf("policy %v; want %v", c.policy, want)
	}
	c = newConfig([]Option{Options.MaxAttempts(2)})
	if c.policy.MaxAttempts() != 2 || c.policy.Schedule()[0] != retrypolicy.Default().Schedule()[0] {
		t.Fatalf("MaxAttempts alone keeps the default waits: %v", c.policy)
	}
	c = newConfig([]Option{Options.MaxAttempts(-1), Options.JitterFactor(7)})
	if c.policy.MaxAttempts() != retrypolicy.DefaultMaxAttempts || c.policy.Jitter() != 1 {
		t.Fatalf("out-of-range shorthands: %v", c.policy)
	}
}
