package deadletter

import (
	"fmt"
	"strings"
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
