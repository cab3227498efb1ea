package messaging

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Transports wrap them with detail; test with errors.Is.
var (
	// ErrClosed reports use of a connector, connection, reader, stream or writer
	// after Close.
	ErrClosed = errors.New("messaging: already closed")
	// ErrUnroutable reports a mandatory message that reached no queue; the
	// broker returned it (312 NO_ROUTE) and nothing stored it.
	ErrUnroutable = errors.New("messaging: message reached no queue")
	// ErrRefused reports a message the broker negatively acknowledged.
	ErrRefused = errors.New("messaging: the broker refused the message")
	// ErrArrivalUnknown reports a message whose confirmation was lost with its
	// channel or connection: it may or may not have reached the broker.
	ErrArrivalUnknown = errors.New("messaging: connection lost before confirm; arrival unknown")
	// ErrPublishingPaused reports a publish refused at once because the broker has
	// blocked the connection (a memory or disk alarm).
	ErrPublishingPaused = errors.New("messaging: the broker has blocked this connection; publishing is paused")
	// ErrTooManyOutstanding reports a publish that found the window of
	// unconfirmed publishes full for longer than its context allowed.
	ErrTooManyOutstanding = errors.New("messaging: too many publishes awaiting confirmation")

	// ErrCommitTimeout reports a commit not confirmed within the broker timeout;
	// the connection was severed.
	ErrCommitTimeout = errors.New("messaging: commit did not complete within the broker timeout")
	// ErrPublishTimeout reports a publish not completed within the broker timeout;
	// the connection was severed.
	ErrPublishTimeout = errors.New("messaging: publish did not complete within the broker timeout")
	// ErrAcknowledgeTimeout reports an acknowledgement not completed within the
	// broker timeout; the connection was severed.
	ErrAcknowledgeTimeout = errors.New("messaging: acknowledgement did not complete within the broker timeout")
	// ErrCloseTimeout reports a close or cancel not completed within the broker
	// timeout; the connection was severed.
	ErrCloseTimeout = errors.New("messaging: close did not complete within the broker timeout")
	// ErrFiltered marks a delivery whose type the consumer does not accept
	// (serialization's AllowedTypes): a serializer puts it in
	// Delivery.Undecodable, and the runtime acknowledges the delivery without
	// handing it to a handler or parking it.
	ErrFiltered = errors.New("messaging: message type not allowed here; acknowledged without handling")
	// ErrConnectTimeout reports a dial and handshake not completed within the
	// broker timeout.
	ErrConnectTimeout = errors.New("messaging: connect did not complete within the broker timeout")
	// ErrShutdownForced reports a Close that could not wait for work in
	// progress: handlers still running at the shutdown deadline were
	// cancelled and their deliveries left unacknowledged (the broker
	// redelivers them), or a republish in progress was cut off.
	ErrShutdownForced = errors.New("messaging: shutdown forced; work in progress was abandoned and its messages will be redelivered")
	// ErrQueueEmpty is what a polling stream's Read returns when its queue
	// holds no ready message (StreamConfig.Poll): read again later.
	ErrQueueEmpty = errors.New("messaging: the queue holds no ready message")
)

// PublishResult is the broker's answer for one message of a write.
type PublishResult struct {
	MessageID string
	// Confirmed is true when the broker acknowledged the publish.
	Confirmed bool
	// Routed is false when a mandatory message was returned unroutable.
	Routed bool
	// Err says why the message did not land; nil when Confirmed and Routed.
	Err error
}

// PublishError accounts, message by message, for a write or commit that did not
// land whole. errors.Is sees through it to each message's error, so
// errors.Is(err, ErrUnroutable) tells whether any message was unroutable.
type PublishError struct {
	Results []PublishResult
}

// Failed returns the results that did not land.
func (e *PublishError) Failed() []PublishResult {
	var failed []PublishResult
	for _, r := range e.Results {
		if r.Err != nil {
			failed = append(failed, r)
		}
	}
	return failed
}

// Error says how many failed, how many landed, and the first failure.
func (e *PublishError) Error() string {
	failed := e.Failed()
	landed := len(e.Results) - len(failed)
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d messages were not confirmed; %d were.", len(failed), len(e.Results), landed)
	if len(failed) > 0 {
		fmt.Fprintf(&b, " The first failure was: %v", failed[0].Err)
	}
	return b.String()
}

// Unwrap exposes each message's error to errors.Is and errors.As.
func (e *PublishError) Unwrap() []error {
	var errs []error
	for _, r := range e.Results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return errs
}

// ErrWireLimit reports a dispatch refused before anything was sent or stored
// because one of its fields cannot travel on AMQP: a short string over 255
// bytes, a header value of a type an AMQP table cannot carry, a header block
// larger than a frame, or a payload over the broker's maximum message size.
// Only that message is refused; the connection is never put at risk. The
// error is a *FieldError that names the field and its limit.
var ErrWireLimit = errors.New("messaging: the message does not fit the AMQP wire format")

// FieldError names the field of a dispatch that broke a wire limit. errors.Is
// matches it against ErrWireLimit.
type FieldError struct {
	// MessageID is the dispatch's id, shortened for display; may be empty.
	MessageID string
	// Field names the offending part: "MessageID", "RoutingKey", "header name",
	// `header "x-trace"`, "Payload", ...
	Field string
	// Size is the field's size in bytes (0 when the problem is its type).
	Size int
	// Limit is the largest size the wire allows (0 when the problem is its type).
	Limit int
	// Problem, when set, replaces the size sentence (a type the wire cannot carry).
	Problem string
}

// Error says which field, why, and what to do.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("messaging: refused a message")
	if e.MessageID != "" {
		fmt.Fprintf(&b, " (id %q)", e.MessageID)
	}
	if e.Problem != "" {
		fmt.Fprintf(&b, ": %s %s; nothing was sent or stored", e.Field, e.Problem)
		return b.String()
	}
	fmt.Fprintf(&b, ": %s is %d bytes and AMQP carries at most %d; shorten it (nothing was sent or stored)", e.Field, e.Size, e.Limit)
	return b.String()
}

// Is matches ErrWireLimit.
func (e *FieldError) Is(target error) bool { return target == ErrWireLimit }

// Broker refusals, by meaning. A transport returns a *BrokerError that matches
// one of these with errors.Is, so no caller ever matches a broker's text.
var (
	// ErrNotFound: the queue, exchange or virtual host does not exist (404).
	ErrNotFound = errors.New("messaging: the broker has no such queue, exchange or virtual host")
	// ErrPreconditionFailed: a declaration differs from what exists, or a
	// message broke a broker limit (406).
	ErrPreconditionFailed = errors.New("messaging: the broker refused a declaration or message that differs from what it holds or allows")
	// ErrAccessRefused: the user may not do this, or the credentials are wrong
	// (403 ACCESS_REFUSED, 530 NOT_ALLOWED at connect).
	ErrAccessRefused = errors.New("messaging: the broker refused access")
	// ErrBadAddress: the broker address does not parse; no attempt and no
	// other node fixes it, only the configuration.
	ErrBadAddress = errors.New("messaging: the broker address is malformed")
	// ErrResourceLocked: an exclusive queue belongs to another connection (405).
	ErrResourceLocked = errors.New("messaging: the queue is exclusive to another connection")
)

// AMQP reply codes the transports map onto the sentinels above.
const (
	ReplyNoRoute            = 312
	ReplyAccessRefused      = 403
	ReplyNotFound           = 404
	ReplyResourceLocked     = 405
	ReplyPreconditionFailed = 406
	ReplyNotAllowed         = 530
	// ReplyConnectionForced: the broker closed the connection (an operator,
	// a node shutting down); nothing was said about any message.
	ReplyConnectionForced = 320
	// ReplyInternalError: the broker closed the connection on an internal
	// error of its own.
	ReplyInternalError = 541
)

// BrokerError is a refusal the broker sent: its reply code and text. It
// matches ErrNotFound, ErrPreconditionFailed, ErrAccessRefused,
// ErrResourceLocked or ErrUnroutable by code with errors.Is, and ErrClosed
// when the broker closed the connection itself (320 CONNECTION_FORCED, 541
// INTERNAL_ERROR): the connection is gone, and the message is not to blame.
type BrokerError struct {
	Code int
	Text string
	// Op names what was refused ("declare queue \"orders\""); may be empty.
	Op string
	// Err is the transport's own error behind the refusal (an amqp091
	// *amqp.Error for RabbitMQ), kept so errors.As still reaches it; may be nil.
	Err error
}

// Unwrap returns the transport's own error, or nil.
func (e *BrokerError) Unwrap() error { return e.Err }

// Error gives the operation, the code and the broker's own words.
func (e *BrokerError) Error() string {
	if e.Op != "" {
		return fmt.Sprintf("messaging: %s: the broker refused it (%d): %s", e.Op, e.Code, e.Text)
	}
	return fmt.Sprintf("messaging: the broker refused it (%d): %s", e.Code, e.Text)
}

// Is matches the sentinel of e's reply code.
func (e *BrokerError) Is(target error) bool {
	switch e.Code {
	case ReplyNotFound:
		return target == ErrNotFound
	case ReplyPreconditionFailed:
		return target == ErrPreconditionFailed
	case ReplyAccessRefused, ReplyNotAllowed:
		return target == ErrAccessRefused
	case ReplyResourceLocked:
		return target == ErrResourceLocked
	case ReplyNoRoute:
		return target == ErrUnroutable
	case ReplyConnectionForced, ReplyInternalError:
		return target == ErrClosed
	}
	return false
}
