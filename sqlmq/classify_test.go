package sqlmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/warrenmq/messaging"
)

func verdicts(outcomes []outcome) []verdict {
	out := make([]verdict, len(outcomes))
	for i, o := range outcomes {
		out[i] = o.verdict
	}
	return out
}

func sameVerdicts(t *testing.T, what string, got []outcome, want ...verdict) {
	t.Helper()
	g := verdicts(got)
	if fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("%s: got verdicts %v, want %v", what, g, want)
	}
}

// Two rows may share a message id (one event published to two exchanges): one
// row's confirm must never settle the other.
func TestClassifyNeverSettlesTwoRowsOnOneConfirm(t *testing.T) {
	rows := []row{{dispatch: messaging.Dispatch{MessageID: "same"}}, {dispatch: messaging.Dispatch{MessageID: "same"}}}

	sameVerdicts(t, "by position", classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "same", Confirmed: true, Routed: true},
		{MessageID: "same", Err: messaging.ErrArrivalUnknown},
	}}), confirmed, unknown)

	sameVerdicts(t, "by id, one result for two rows", classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "same", Confirmed: true, Routed: true},
	}}), confirmed, unknown)

	sameVerdicts(t, "unroutable second", classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "same", Confirmed: true, Routed: true},
		{MessageID: "same", Confirmed: true, Err: messaging.ErrUnroutable},
	}}), confirmed, refused)
}

func TestClassifyLeavesARowWhoseResultNamesAnotherMessageUnknown(t *testing.T) {
	rows := []row{{dispatch: messaging.Dispatch{MessageID: "a"}}}
	got := classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "b", Confirmed: true, Routed: true}}})
	sameVerdicts(t, "foreign result", got, unknown)
}

func TestClassifyTellsANackApart(t *testing.T) {
	rows := []row{{dispatch: messaging.Dispatch{MessageID: "a"}}}
	got := classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "a", Err: messaging.ErrRefused}}})
	sameVerdicts(t, "nack", got, nacked)
}

// A channel-level exception ends the channel for every message pipelined after
// the one that caused it: it names a row only when the row was published alone.
func TestClassifyBlamesAChannelRefusalOnlyOnARowPublishedAlone(t *testing.T) {
	tooLarge := fmt.Errorf("message x: the channel closed before the broker confirmed it (%w): %w",
		&messaging.BrokerError{Code: messaging.ReplyPreconditionFailed, Text: "PRECONDITION_FAILED - message size 2000000 is larger than configured max size 1048576"},
		messaging.ErrArrivalUnknown)
	three := []row{{dispatch: messaging.Dispatch{MessageID: "a"}}, {dispatch: messaging.Dispatch{MessageID: "b"}}, {dispatch: messaging.Dispatch{MessageID: "c"}}}
	all := &messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "a", Err: tooLarge}, {MessageID: "b", Err: tooLarge}, {MessageID: "c", Err: tooLarge}}}
	sameVerdicts(t, "pipelined", classify(three, all), unknown, unknown, unknown)
	if !isolable(all) || held(context.Background(), all) {
		t.Fatalf("a batch the broker closed the channel on must be isolated, not waited out")
	}

	alone := three[:1]
	sameVerdicts(t, "alone", classify(alone, &messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "a", Err: tooLarge}}}), refused)
	sameVerdicts(t, "alone, missing exchange, no account", classify(alone, &messaging.BrokerError{Code: messaging.ReplyNotFound, Text: "NOT_FOUND - no exchange"}), refused)
	sameVerdicts(t, "alone, connection lost", classify(alone, &messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "a", Err: messaging.ErrArrivalUnknown}}}), lost)
}

func TestClassifyMarksAWireLimitUnpublishable(t *testing.T) {
	field := &messaging.FieldError{Field: "MessageID", Size: 300, Limit: 255}
	rows := []row{{dispatch: messaging.Dispatch{MessageID: "a"}}, {dispatch: messaging.Dispatch{MessageID: "b"}}}
	sameVerdicts(t, "per row", classify(rows, &messaging.PublishError{Results: []messaging.PublishResult{
		{MessageID: "a", Err: field}, {MessageID: "b", Confirmed: true, Routed: true},
	}}), unpublishable, confirmed)
	sameVerdicts(t, "whole write, several rows", classify(rows, fmt.Errorf("batch writer: write 2 message(s): %w", field)), unknown, unknown)
	if !isolable(fmt.Errorf("write: %w", field)) {
		t.Fatalf("a write refused for a wire limit must be isolated")
	}
	sameVerdicts(t, "whole write, alone", classify(rows[:1], fmt.Errorf("write: %w", field)), unpublishable)
}

// An outage is never a message's fault: it is waited out, not isolated and
// not counted.
func TestAnOutageIsRecognisedAndIsNotIsolated(t *testing.T) {
	refusedDial := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	for _, err := range []error{
		fmt.Errorf("batch writer: connect: %w", refusedDial),
		&messaging.PublishError{Results: []messaging.PublishResult{{MessageID: "a", Err: fmt.Errorf("blocked: %w", messaging.ErrPublishingPaused)}}},
		fmt.Errorf("connect did not complete: %w", messaging.ErrConnectTimeout),
		fmt.Errorf("%w", messaging.ErrClosed),
	} {
		if !held(context.Background(), err) {
			t.Errorf("%v: want held", err)
		}
	}
	reset := fmt.Errorf("batch writer: open commit writer: %w", syscall.ECONNRESET)
	if !held(context.Background(), reset) || isolable(reset) {
		t.Errorf("%v: a failure before publishing is the broker's, to be waited out without isolating", reset)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if !held(ended, errors.New("anything")) {
		t.Errorf("a stopping processor must not count or isolate")
	}
}

// A refusal is read from the transport's *messaging.BrokerError by reply code:
// a frame error names the row published alone; an error that only says
// NOT_FOUND in its text is not a refusal.
func TestClassifyReadsTheReplyCodeNotTheText(t *testing.T) {
	alone := []row{{dispatch: messaging.Dispatch{MessageID: "a"}}}
	frame := &messaging.BrokerError{Code: 501, Text: "FRAME_ERROR - type 2, all octets = <<>>"}
	sameVerdicts(t, "frame error", classify(alone, fmt.Errorf("publish: %w", frame)), refused)
	sameVerdicts(t, "forced close", classify(alone, &messaging.BrokerError{Code: 320, Text: "CONNECTION_FORCED - closed"}), lost)
	sameVerdicts(t, "text only", classify(alone, errors.New("NOT_FOUND - no exchange 'x' in vhost '/'")), unknown)
}
