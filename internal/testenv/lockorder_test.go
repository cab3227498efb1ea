package testenv

import (
	"strings"
	"syscall"
	"testing"
)

// A test that holds the database lock is refused the broker lock at once,
// and so is every subtest it runs; the error names both locks.
func TestTheBrokerLockIsRefusedToATestHoldingTheDatabaseLock(t *testing.T) {
	lockDatabases(t, "testenv.MySQL", syscall.LOCK_SH)
	err := brokerAfterDatabase(t.Name(), "testenv.Broker")
	if err == nil || !strings.Contains(err.Error(), "testenv.Broker") || !strings.Contains(err.Error(), "testenv.MySQL") {
		t.Fatalf("refusal: %v; want one naming testenv.Broker and testenv.MySQL", err)
	}
	t.Run("a subtest", func(t *testing.T) {
		if err := brokerAfterDatabase(t.Name(), "testenv.Disrupt"); err == nil || !strings.Contains(err.Error(), "testenv.Disrupt") {
			t.Fatalf("refusal in a subtest: %v", err)
		}
	})
}

// The documented order, and a test that holds no database lock, are let be.
func TestTheBrokerLockBeforeTheDatabaseLockIsLetBe(t *testing.T) {
	if err := brokerAfterDatabase(t.Name(), "testenv.Broker"); err != nil {
		t.Fatal(err)
	}
	t.Run("a database lock released", func(t *testing.T) {
		t.Run("holder", func(t *testing.T) { lockDatabases(t, "testenv.Postgres", syscall.LOCK_SH) })
		if err := brokerAfterDatabase(t.Name()+"/holder", "testenv.Broker"); err != nil {
			t.Fatalf("the lock of a test that ended still counts: %v", err)
		}
	})
}
