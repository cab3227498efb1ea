package sqlmq

import (
	"errors"
	"testing"

	"github.com/warrenmq/messaging"
)

// Two rows may share a message id (one event published to two exchanges): one
// row's confirm must never settle the other.
func TestClassifyNeverSettlesTwoRowsOnOneConfirm(t *testing.T) {
	rows := []row{{dispatch: messaging.Dispatch{MessageID: "same"}}, {dispatch: messaging.Dispatch{MessageID: "same"}}}

	byPosition := classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "same", Confirmed: true, Routed: true},
		{MessageID: "same", Err: messaging.ErrArrivalUnknown},
	}})
	if byPosition[0] != nil || !errors.Is(byPosition[1], errTransient) {
		t.Fatalf("by position: want [nil transient], got %v", byPosition)
	}

	byID := classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "same", Confirmed: true, Routed: true},
	}})
	if byID[0] != nil || !errors.Is(byID[1], errTransient) {
		t.Fatalf("by id, one result for two rows: want [nil transient], got %v", byID)
	}

	unroutableSecond := classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "same", Confirmed: true, Routed: true},
		{MessageID: "same", Confirmed: true, Err: messaging.ErrUnroutable},
	}})
	if unroutableSecond[0] != nil || !errors.Is(unroutableSecond[1], messaging.ErrUnroutable) {
		t.Fatalf("want [nil unroutable], got %v", unroutableSecond)
	}
}

func TestClassifyRetriesARowWhoseResultNamesAnotherMessage(t *testing.T) {
	rows := []row{{dispatch: messaging.Dispatch{MessageID: "a"}}}
	got := classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "b", Confirmed: true, Routed: true}}})
	if !errors.Is(got[0], errTransient) {
		t.Fatalf("want transient, got %v", got)
	}
}

func TestClassifyTreatsANackAsTransient(t *testing.T) {
	rows := []row{{dispatch: messaging.Dispatch{MessageID: "a"}}}
	got := classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "a", Err: messaging.ErrRefused}}})
	if !errors.Is(got[0], errTransient) {
		t.Fatalf("a nack must not count towards retirement; got %v", got)
	}
}
