package request

import (
	"errors"
	"fmt"
)

// Pattern headers: deliberately outside the reserved x-acemq- namespace, so
// they reach handlers and every AceMQ library reads them.
const (
	// HeaderReplyTo carries the reply queue, beside the AMQP reply-to
	// property: a service that rebuilt a message keeps its headers and loses
	// its properties, so the responder reads the header first.
	HeaderReplyTo = "acemq-reply-to"
	// HeaderError marks an error reply; its value is the responder's error
	// text and the reply's body is the zero response.
	HeaderError = "acemq-error"
)

// ErrRequestTimedOut reports that no reply arrived within the requester's
// timeout. It says nothing about whether the request was handled: the work
// may well have been done, which is why a request that changes anything
// should be idempotent.
var ErrRequestTimedOut = errors.New("acemq: no reply arrived before the deadline")

// ErrReplyQueueLost reports a request whose generated reply queue went away
// with its connection before the reply came back: the reply, if one was sent,
// reached no queue. The request may or may not have been handled. The
// requester declares the queue again; call again once it is back. The error
// Do returns is marked messaging.Outage: a handler that asks inside a
// consumer spends no retry attempt on it.
var ErrReplyQueueLost = errors.New("acemq: the reply queue was lost with its connection before the reply arrived; the request may or may not have been handled, call again")

// ErrUnanswerable matches the reason a request with no reply address was
// dead-lettered with (an *UnanswerableError).
var ErrUnanswerable = errors.New("acemq: the request carries no reply address")

// ResponderError is what Do returns when the responder answered with an
// error reply. Its text is the responder's, after the prefix "acemq: the
// responder failed: " every AceMQ library writes; it is a
// string, so errors.Is does not see the responder's own errors across it.
type ResponderError struct {
	// Text is the responder's error text (its acemq-error header).
	Text string
}

// Error returns "acemq: the responder failed: <text>".
func (e *ResponderError) Error() string { return "acemq: the responder failed: " + e.Text }

// UnanswerableError is the reason a request carrying neither reply address
// is dead-lettered with: retrying cannot make a reply address appear.
type UnanswerableError struct {
	// MessageID is the request's id.
	MessageID string
}

// Error says which request and why nothing could answer it.
func (e *UnanswerableError) Error() string {
	return fmt.Sprintf("acemq: request %s carries neither a acemq-reply-to header nor a reply-to property, so there is nowhere to reply", e.MessageID)
}

// Is matches ErrUnanswerable.
func (e *UnanswerableError) Is(target error) bool { return target == ErrUnanswerable }
