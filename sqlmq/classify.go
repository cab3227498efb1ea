package sqlmq

import (
	"context"
	"errors"
	"net"
	"syscall"

	"github.com/warrenmq/messaging"
)

// verdict is what one publish says about one row.
type verdict int

const (
	// confirmed: the broker confirmed and routed the row.
	confirmed verdict = iota
	// unknown: the row did not land, and the failure does not say whose it was
	// (the channel or connection was lost, a timeout): the row may be at fault
	// or may have shared the fate of another.
	unknown
	// refused: the broker refused this message itself (unroutable, its
	// exchange missing, too large for the broker).
	refused
	// unpublishable: the row can never travel on AMQP (a wire limit).
	unpublishable
	// passing: the broker could not take the message now (a nack, say a full
	// queue with reject-publish); it says nothing against the message.
	passing
)

// outcome is a row's verdict and the error behind it.
type outcome struct {
	verdict verdict
	cause   error
}

// classify returns, per row of attempt, what the publish's error says about
// it. Results of a *messaging.PublishError come in publish order, one per row,
// from this module's transports: they are matched by position; otherwise by
// message id, each result used once, so two rows sharing a message id can
// never settle on one confirm. A row no result accounts for is unknown.
//
// A channel-level refusal (404, 406, frame and syntax errors) ends the channel
// for every message pipelined after the one that caused it, so it names the
// row only when the row was published alone.
func classify(attempt []row, err error) []outcome {
	outcomes := make([]outcome, len(attempt))
	if err == nil {
		return outcomes
	}
	alone := len(attempt) == 1
	var publishErr *messaging.PublishError
	if !errors.As(err, &publishErr) {
		for i := range outcomes {
			outcomes[i] = outcome{verdict: unknown, cause: err}
		}
		if alone {
			outcomes[0] = judge(err, true)
		}
		return outcomes
	}
	byPosition := len(publishErr.Results) == len(attempt)
	byID := map[string][]messaging.PublishResult{}
	if !byPosition {
		for _, result := range publishErr.Results {
			byID[result.MessageID] = append(byID[result.MessageID], result)
		}
	}
	for i, r := range attempt {
		outcomes[i] = outcome{verdict: unknown, cause: err}
		var result messaging.PublishResult
		if byPosition {
			result = publishErr.Results[i]
			if result.MessageID != "" && result.MessageID != r.dispatch.MessageID {
				continue // not the account of this row
			}
		} else {
			queued := byID[r.dispatch.MessageID]
			if len(queued) == 0 {
				continue
			}
			result, byID[r.dispatch.MessageID] = queued[0], queued[1:]
		}
		switch {
		case result.Err == nil && result.Confirmed && result.Routed:
			outcomes[i] = outcome{verdict: confirmed}
		case result.Err == nil && result.Confirmed:
			outcomes[i] = outcome{verdict: refused, cause: messaging.ErrUnroutable}
		case result.Err != nil:
			outcomes[i] = judge(result.Err, alone)
		}
	}
	return outcomes
}

// judge classifies the error of one row that did not land.
func judge(err error, alone bool) outcome {
	switch {
	case errors.Is(err, messaging.ErrWireLimit):
		return outcome{verdict: unpublishable, cause: err}
	case errors.Is(err, messaging.ErrUnroutable):
		return outcome{verdict: refused, cause: err}
	case errors.Is(err, messaging.ErrRefused):
		return outcome{verdict: passing, cause: err}
	case alone && channelRefusal(err):
		return outcome{verdict: refused, cause: err}
	}
	return outcome{verdict: unknown, cause: err}
}

// channelRefusal reports a broker or client exception caused by what was
// published on the channel, as the transport's *messaging.BrokerError: 404
// NOT_FOUND (no such exchange), 406 PRECONDITION_FAILED (say, a message over
// max_message_size), 501 FRAME_ERROR, 502 SYNTAX_ERROR, 505 UNEXPECTED_FRAME.
// It reads the reply code, never the text.
func channelRefusal(err error) bool {
	if errors.Is(err, messaging.ErrNotFound) || errors.Is(err, messaging.ErrPreconditionFailed) {
		return true
	}
	var refused *messaging.BrokerError
	if !errors.As(err, &refused) {
		return false
	}
	switch refused.Code {
	case replyFrameError, replySyntaxError, replyUnexpectedFrame:
		return true
	}
	return false
}

// AMQP reply codes of the connection errors a malformed publish causes.
const (
	replyFrameError      = 501
	replySyntaxError     = 502
	replyUnexpectedFrame = 505
)

// unreachable reports an error that says the broker cannot be used at all
// now, whatever is published: it cannot be reached, it has paused publishing
// (a memory or disk alarm), it is not keeping up, the transport is closed, or
// the processor is stopping. Nothing is counted against a row for it; the
// rows wait in order and are published again after RetryTimeout.
func unreachable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	// A connection that was already gone before anything was published
	// (ErrClosed without an account of the rows) says nothing of them; one
	// that closed under the write, with each row accounted for, is what
	// isolation looks into.
	var publishErr *messaging.PublishError
	if errors.Is(err, messaging.ErrClosed) && !errors.As(err, &publishErr) {
		return true
	}
	for _, sentinel := range []error{
		messaging.ErrPublishingPaused, messaging.ErrConnectTimeout, messaging.ErrTooManyOutstanding,
		syscall.ECONNREFUSED, syscall.EHOSTUNREACH, syscall.ENETUNREACH,
		context.Canceled, context.DeadlineExceeded,
	} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr)
}

// isolable reports whether a failed publish of several rows may have been
// caused by one of them, so that publishing them in smaller groups can find
// it: the transport accounted for the rows one by one (publishing was under
// way when it failed), it refused the write for a wire limit, or the broker
// closed the channel for what was published on it. Any other
// error (a connection that could not be opened, a channel that was gone
// before the write) is the broker's, whatever the rows hold.
func isolable(err error) bool {
	var publishErr *messaging.PublishError
	return errors.As(err, &publishErr) || errors.Is(err, messaging.ErrWireLimit) || channelRefusal(err)
}
