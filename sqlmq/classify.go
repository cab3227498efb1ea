package sqlmq

import (
	"context"
	"errors"

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
	// nacked: the broker negatively acknowledged the message (a queue that
	// is full and rejects publishes, say). It is counted like a refusal: a
	// queue that nacks for ever must not hold the row for ever unseen.
	nacked
	// lost: the connection or channel closed under the row published alone,
	// for no refusal of its own: an outage, never a verdict on the message.
	lost
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
		return outcome{verdict: nacked, cause: err}
	case alone && channelRefusal(err):
		return outcome{verdict: refused, cause: err}
	case alone && messaging.IsConnectionLost(err):
		return outcome{verdict: lost, cause: err}
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

// held reports whether a failed publish says nothing about its rows, so
// they wait in order and are published again after RetryDelay, with nothing
// counted against any of them: the processor is stopping; the failure has no
// account row by row and is no refusal of what was published (the
// connection could not be opened, or was gone before anything was sent); or
// it is an outage that the broker announced rather than a connection lost
// under the write (publishing paused by an alarm, the window of unconfirmed
// publishes full). A connection or channel that closed under the write, with
// each row accounted for, is not held: the broker closes a channel for what
// one message held (a missing exchange, a message over its size limit), and
// isolation publishes the rows again in halves to find it.
func held(ctx context.Context, err error) bool {
	if ctx.Err() != nil || !isolable(err) {
		return true
	}
	return messaging.IsOutage(err) && !messaging.IsConnectionLost(err)
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
