// Package request is request and reply over a broker: a typed Requester
// publishes a request and blocks for its answer, and a responder (Serve, or
// NewHandler under a consumer of your own) answers it.
//
//	requester, err := request.NewRequester[PriceRequest, PriceResponse](ctx, transport, "", "prices")
//	defer requester.Close()
//	response, err := requester.Do(ctx, PriceRequest{SKU: "abc"})
//
//	responder, err := request.Serve(ctx, transport, "prices",
//		func(ctx context.Context, d messaging.Delivery, r PriceRequest) (PriceResponse, error) {
//			return price(ctx, r)
//		})
//	defer responder.Close()
//
// This is a synchronous shape drawn on an asynchronous system: a caller
// blocked on a reply holds a goroutine, a connection and a deadline, and a
// backed-up queue becomes a service that stops answering. Use it where the
// caller cannot go on without the answer, and publish an event otherwise.
//
// # The requester
//
// NewRequester(ctx, connector, topic, routingKey, options...) addresses its
// requests to topic (an exchange; "" is the default exchange, so routingKey
// names the responder's queue). It reads its reply queue with a streaming
// subscription of its own and publishes through a batch.Writer, which
// pipelines concurrent callers' publishes; ctx bounds only the start, and a
// reply queue that cannot be declared is returned as the error. Many callers
// may call Do at once: replies are paired with their callers by correlation
// id.
//
// Do(ctx, request) always uses a fresh correlation id; DoWith(ctx, request,
// envelope) passes your envelope fields through (id, causation, type,
// headers, expiration; a Topic or RoutingKey replaces the address). Requests
// are mandatory and confirmed: Do returns messaging.ErrUnroutable at once
// when nothing is bound to the address. Close drains for
// Options.CloseTimeout at most (then the transport's close bound applies);
// callers still waiting get messaging.ErrClosed.
//
// Do waits Options.Timeout (DefaultTimeout, 30 s), then returns an error
// matching ErrRequestTimedOut ("acemq: no reply arrived before the deadline
// after 5s (correlation ...)"), which says nothing about whether the work
// was done. The timer runs beside the caller's context: ctx ending first
// gives ctx.Err().
//
// The reply queue is generated, acemq-reply-<uuid> (ReplyQueue names it):
// classic, transient, exclusive and auto-delete, without dead-letter
// arguments. When its connection drops, the requester declares it again
// under the same name (first after Options.ReconnectDelay, then with the
// streaming runtime's backoff); callers in flight fail at once with
// ErrReplyQueueLost (their replies went with the queue), callers that arrive
// meanwhile wait for it within their timeout, and later calls work. A
// request whose writer connection had gone stale (refused with
// messaging.ErrClosed, so not sent) is sent once more on a new connection.
// Options.ReplyTo(queue) reads replies from a named queue instead: durable
// (so quorum), without expiry, kept across reconnects with the replies in
// it, and yours to delete.
//
// A reply no caller waits for (it came after its caller gave up) is
// acknowledged, dropped and counted (Monitor.ReplyDropped). A reply that
// carries a causation id must carry the request's id: one with a waiting
// caller's correlation id and another causation is not that caller's
// answer (forged, or misaddressed), so it is dropped and counted
// (Monitor.ReplyRefused) and the caller goes on waiting. A reply without a
// causation id, from a responder that stamps none, is matched by
// correlation alone.
//
// # The responder
//
// Serve(ctx, connector, queue, fn, options...) runs a streaming consumer of
// queue (Options.Workers at once, with its own settlement) and returns once
// its stream opened, or the start error; Server.Close stops it (a
// messaging.ListenCloser). NewHandler(replies, fn, options...) is the same
// responder as a messaging.Handler, for a consumer of your own. For each
// request fn receives the delivery and the decoded request, and its answer
// is published:
//
//   - to the default exchange, routing key the reply address, with the
//     request's correlation id and the request's id as its causation id;
//   - without mandatory: a reply to nowhere is dropped and the request
//     accepted;
//   - once per batch: a batch run again by retry does not publish a reply
//     twice (messaging.PublishOnce, keyed by the request's id).
//
// An error from fn goes back as a zero response carrying the acemq-error
// header, and Do returns a *ResponderError ("acemq: the responder failed:
// <text>"; the text is a string, so errors.Is does not see the responder's
// error). The request is then rejected to {queue}.dlq (messaging.Reject with
// the error marked Fatal): a responder error is never retried. A request
// whose payload does not decode is answered the same way, so its caller
// hears of it at once. A reply that cannot be published after the work
// succeeded is messaging.Retry, and fn runs again: make responders
// idempotent. A request with no reply address is rejected (Fatal) with an
// *UnanswerableError matching ErrUnanswerable ("acemq: request <id> carries
// neither a acemq-reply-to header nor a reply-to property, so there is
// nowhere to reply"), lands in {queue}.dlq and is never retried. Answered
// and Unanswerable (on the Server, or the Handler) count replies published
// and requests that could not be answered; Monitor.Answered and
// Monitor.Unanswerable hear them.
//
// # Wire contract
//
// The requester writes its reply queue twice, as the reply-to property and
// as the acemq-reply-to header (HeaderReplyTo); ReplyAddress reads the
// header first (a string or bytes), then the property, so a request
// published by hand with either is answered. An error reply carries
// acemq-error (HeaderError). Both are application headers, outside the
// reserved x-acemq- namespace; the envelope headers, {queue}.dlq and the
// rest of the AceMQ family's contract are in doc/contracts.md.
//
// Payloads are JSON unless Options.Codec says otherwise; the requester
// encodes its own payload, so a serialization-decorated connector passes it
// through unchanged.
//
// # Options
//
// Timeout (30 s) and CloseTimeout (10 s); ReplyTo (a generated queue);
// ReconnectDelay (100 ms); Codec (JSON both ways); MessageType (written on
// every request; default none); Workers (Serve; 1) and Subscription (Serve's
// subscription options: capacities, topics, retry policy, shutdown);
// Logger (slog.Default()); Monitor (NopMonitor). Monitor.RequestCompleted
// hears every Do with its outcome (OutcomeAnswered, OutcomeTimedOut or
// OutcomeFailed: an error reply, a failed publish, a reply that did not
// decode, the reply queue lost, the caller's ctx ended) and the time from before the publish to Do's return;
// monitoring/prometheus counts them as request_total and request_seconds.
// monitoring/otel traces a requester's Do and a responder's work.
package request
