package deadletter

import (
	"fmt"
	"strings"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// noReason is the whole reason when the error given is nil.
const noReason = "no reason given"

func rejected(err error) string {
	if err == nil {
		return noReason
	}
	return "the handler rejected it: " + err.Error()
}

func parked(err error) string {
	if err == nil {
		return noReason
	}
	return "the handler parked it: " + err.Error()
}

// refused words a Retry or InProgress the consumer refused.
func refusedReason(decision messaging.Decision, why string) string {
	text := "this consumer does not retry (" + why + ")"
	if decision.Verdict == messaging.InProgressed {
		text = "this consumer does not hold messages in progress (" + why + ")"
	}
	if decision.Reason != nil {
		text += ": " + decision.Reason.Error()
	}
	return text
}

func unprocessable(err error) string {
	if err == nil {
		return noReason
	}
	return "the handler reported an unprocessable message: " + err.Error()
}

func exhausted(attempts int, text string) string {
	if attempts == 1 {
		return "exhausted 1 attempt: " + text
	}
	return fmt.Sprintf("exhausted %d attempts: %s", attempts, text)
}

// undecodable words a decode failure; a decoder's error that already says
// "could not be decoded: " is not prefixed twice.
func undecodable(err error) string {
	const prefix = "could not be decoded: "
	text := err.Error()
	if strings.HasPrefix(text, prefix) {
		return text
	}
	return prefix + text
}

// MaxReason bounds the reason written to x-acemq-error, in bytes: a panic
// text of any size must not make the set-aside copy too large for a frame.
const MaxReason = 4 << 10

// bounded cuts reason to at most MaxReason bytes, on a rune boundary, with a
// marker that says how long it was.
func bounded(reason string) string {
	if len(reason) <= MaxReason {
		return reason
	}
	marker := fmt.Sprintf(" …[cut; %d bytes in all]", len(reason))
	return wire.Cut(reason, MaxReason-len(marker)) + marker
}
