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

// A settlement decorator's context records hops when nothing outside it
// does, and keeps the outer record when something does (retry, or an outer
// settlement decorator), so a batch's hop is published once however many
// layers run it.
func TestWithSettlerRecordsHopsAndKeepsAnOuterRecord(t *testing.T) {
	publish := func(ctx context.Context, calls *int) {
		t.Helper()
		if err := PublishOnce(ctx, "a", func() error { *calls++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	alone := 0
	settled := WithSettler(context.Background(), nil)
	publish(settled, &alone)
	publish(WithSettler(settled, nil), &alone) // an inner settlement decorator
	if alone != 1 {
		t.Fatalf("published %d times under one settlement decorator's record, want 1", alone)
	}

	outer := WithHopRecord(context.Background())
	nested := 0
	publish(WithSettler(outer, nil), &nested)
	publish(WithSettler(outer, nil), &nested) // the batch run again under the outer record
	if nested != 1 {
		t.Fatalf("published %d times under an outer record, want 1", nested)
	}
}

// The batch contexts cost one allocation each, and keep their parent's
// values, deadline and cancellation.
func TestBatchContextsAllocateOnceAndKeepTheirParent(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "kept"))
	deliveries := []Delivery{{MessageID: "1"}}
	var ctx context.Context
	if allocs := testing.AllocsPerRun(100, func() { ctx = WithSettler(WithDeliveries(parent, deliveries), nil) }); allocs != 2 {
		t.Fatalf("%.0f allocations for a batch's deliveries and settler, want 2", allocs)
	}
	if got := DeliveriesFrom(ctx); len(got) != 1 || got[0].MessageID != "1" {
		t.Fatalf("DeliveriesFrom returned %v", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = DeliveriesFrom(ctx); _ = SettlerFrom(ctx) }); allocs != 0 {
		t.Fatalf("%.0f allocations to read them back, want 0", allocs)
	}
	if ctx.Value(key{}) != "kept" {
		t.Fatalf("the parent's value was lost")
	}
	if DeliveriesFrom(context.Background()) != nil || SettlerFrom(context.Background()) != nil {
		t.Fatalf("an empty context has neither")
	}
	cancel()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("the parent's cancellation was lost: %v", ctx.Err())
	}
}
