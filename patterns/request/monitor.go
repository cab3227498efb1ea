package request

import "time"

// Outcomes of a request, reported to Monitor.RequestCompleted.
const (
	// OutcomeAnswered: a reply arrived and decoded.
	OutcomeAnswered = "answered"
	// OutcomeTimedOut: the requester's timeout passed first (ErrRequestTimedOut).
	OutcomeTimedOut = "timed_out"
	// OutcomeFailed: an error reply, a publish that failed, a reply that did
	// not decode, the reply queue lost, or the caller's context ended.
	OutcomeFailed = "failed"
)

// Monitor receives the requester's and the responder's counts. A requester
// calls RequestCompleted, ReplyDropped and ReplyRefused; a responder Answered
// and Unanswerable.
type Monitor interface {
	// RequestCompleted: Do returned; routingKey is the requester's, outcome
	// one of the Outcome constants, elapsed from before the publish to the
	// return.
	RequestCompleted(routingKey, outcome string, elapsed time.Duration)
	// ReplyDropped: a reply arrived that no caller waits for (it came after
	// its caller timed out or gave up, or belongs to another requester
	// sharing a named reply queue); it was acknowledged and dropped.
	ReplyDropped(routingKey string)
	// ReplyRefused: a reply arrived with a waiting caller's correlation id
	// but a causation id other than that caller's request id, so it is not
	// the answer to that request (forged, or published by mistake); it was
	// acknowledged and dropped, and the caller goes on waiting for its own.
	ReplyRefused(routingKey string)
	// Answered: a responder published a reply (an error reply included) to
	// queue's request.
	Answered(queue string)
	// Unanswerable: a responder dead-lettered a request of queue that
	// carried no reply address.
	Unanswerable(queue string)
}

// NopMonitor ignores every event; embed it to implement only the callbacks you
// need.
type NopMonitor struct{}

func (NopMonitor) RequestCompleted(string, string, time.Duration) {}
func (NopMonitor) ReplyDropped(string)                            {}
func (NopMonitor) ReplyRefused(string)                            {}
func (NopMonitor) Answered(string)                                {}
func (NopMonitor) Unanswerable(string)                            {}
