package messaging

import (
	"context"
	"errors"
	"testing"
)

func TestPublishOnceWithoutRecordAlwaysPublishes(t *testing.T) {
	calls := 0
	for range 3 {
		if err := PublishOnce(context.Background(), "a", func() error { calls++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 3 {
		t.Fatalf("published %d times, want 3", calls)
	}
}

func TestPublishOnceRemembersOnlySuccess(t *testing.T) {
	ctx := WithHopRecord(context.Background())
	ctx = WithHopRecord(ctx) // an inner record call keeps the outer record
	calls := 0
	failing := errors.New("broker said no")
	if err := PublishOnce(ctx, "a", func() error { calls++; return failing }); !errors.Is(err, failing) {
		t.Fatalf("error %v, want %v", err, failing)
	}
	for range 3 {
		if err := PublishOnce(ctx, "a", func() error { calls++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := PublishOnce(ctx, "b", func() error { calls++; return nil }); err != nil {
		t.Fatal(err)
	}
	if calls != 3 { // the failure, one success for a, one for b
		t.Fatalf("published %d times, want 3", calls)
	}
	fresh := WithHopRecord(context.Background())
	if err := PublishOnce(fresh, "a", func() error { calls++; return nil }); err != nil || calls != 4 {
		t.Fatalf("a new batch must publish again: calls %d, err %v", calls, err)
	}
}
