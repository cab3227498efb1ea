// Package request is the seed's request and reply: a typed Requester that
// publishes a request and blocks for its answer, and a responder (Serve, or
// NewHandler under your own consumer) that answers it.
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
// Rows of the patterns map (RR1-RR25), as built here:
//
//   - RR1 NewRequester[Req, Resp](ctx, connector, topic, routingKey,
//     options...): it owns a streaming subscription of its reply queue and a
//     batch.Writer for the requests, which pipelines concurrent callers'
//     publishes; ctx bounds the start only, and a reply queue that cannot be
//     declared is returned.
//   - RR2 Do(ctx, request) (Resp, error). RR3 Close, bounded by
//     Options.CloseTimeout; callers still waiting get messaging.ErrClosed.
//   - RR4 Serve(ctx, connector, queue, fn, options...) wires a streaming
//     consumer (FullDeliveryToHandler, its own settlement, Options.Workers)
//     and returns once the stream opened, or the start error. The seed's
//     Message[Req] is fn's (messaging.Delivery, Req). NewHandler(replies,
//     fn, options...) is the same responder as a messaging.Handler for a
//     consumer of your own. RR5 Server.Close (a messaging.ListenCloser).
//   - RR6 replies are paired by correlation id; the tests run 20 concurrent
//     callers on memory and on RabbitMQ. A reply that carries a causation id
//     must carry the request's id (the responder stamps it, RR21): one with
//     a waiting caller's correlation id and another causation is not that
//     caller's answer, forged or misaddressed; it is dropped and counted
//     (Monitor.ReplyRefused) and the caller goes on waiting for its own. A
//     reply without a causation id, from a responder that stamps none, is
//     matched by correlation alone.
//   - RR7 Do always uses a fresh correlation id; DoWith(ctx, request,
//     envelope) passes every other envelope field through (id, causation,
//     type, headers, expiration; a Topic or RoutingKey replaces the address).
//   - RR8 a responder error goes back as a zero response carrying
//     acemq-error; Do returns *ResponderError, "acemq: the responder failed:
//     <text>", a string: errors.Is does not see across it.
//   - RR9 after the error reply the request is rejected to {queue}.dlq
//     (messaging.Reject with the error marked Fatal): responder errors are
//     never retried. A request whose payload does not decode is answered the
//     same way, so its caller hears it at once. An error reply that cannot be
//     published is messaging.Retry.
//   - RR10 ErrRequestTimedOut, wrapped as "acemq: no reply arrived before the
//     deadline after 5s (correlation …)"; Options.Timeout, DefaultTimeout
//     30 s (zero or negative is the default). It says nothing about whether
//     the work was done. RR11 the timer and the caller's ctx are independent:
//     ctx ending first gives ctx.Err().
//   - RR12 the reply is published without mandatory: a reply to nowhere is
//     dropped and the request accepted.
//   - RR13 the generated reply queue acemq-reply-<uuid> is transient,
//     exclusive, auto-delete, classic, without dead-letter arguments. When
//     its connection drops, the reply subscription declares it again under
//     the same name (first after Options.ReconnectDelay, then with the
//     streaming runtime's backoff); callers in
//     flight fail at once with ErrReplyQueueLost (their replies went with
//     the queue), callers that arrive meanwhile wait for it within their
//     timeout, and later calls work. A request whose writer connection had
//     gone stale (refused with messaging.ErrClosed, so not sent) is sent once
//     more on a new connection.
//   - RR14 Options.ReplyTo(queue) reads replies from a named queue, durable,
//     so quorum, with no x-expires; deleting it is the caller's job. Its
//     callers in flight keep waiting across a reconnect: their replies wait
//     in the queue.
//   - RR15 ReplyQueue(). RR16 Do writes the reply queue as the reply-to
//     property and as the acemq-reply-to header. RR17 ReplyAddress reads the
//     header first (a string or bytes), then the property. RR18 HeaderReplyTo,
//     HeaderError. RR19 a request published by hand with either is answered
//     (tested with each alone).
//   - RR20 a request with neither is rejected with messaging.Fatal of an
//     *UnanswerableError ("acemq: request %s carries neither a acemq-reply-to
//     header nor a reply-to property, so there is nowhere to reply";
//     errors.Is ErrUnanswerable), lands in {queue}.dlq, is never retried, and
//     counts in Unanswerable() and Monitor.Unanswerable.
//   - RR21 the reply goes to exchange "", key the reply address, correlation
//     the request's, causation the request's id.
//   - RR22 a reply that cannot be published after the work succeeded is
//     messaging.Retry: the work runs again, so responders should be
//     idempotent. A batch run again by retry does not publish a reply twice
//     (messaging.PublishOnce keyed by the request's id).
//   - RR23 Answered() is counted before the reply is published and taken back
//     when the publish fails (Monitor.Answered hears it once it landed); the
//     counters live on the Handler, created before Serve subscribes.
//   - RR24 difference on purpose: a late or unmatched reply is acknowledged
//     and dropped as the seed says, but counted (Monitor.ReplyDropped), since
//     issue 13 asks for a late-reply counter.
//   - RR25 Monitor.RequestCompleted(routingKey, outcome, elapsed), outcome
//     answered, timed_out or failed (an error reply, a failed publish, the
//     reply queue lost, the caller's ctx ended), elapsed from before the
//     publish to Do's return; monitoring/prometheus turns it into
//     request_total and request_seconds.
//   - RR26 (the OpenTelemetry span) waits for the tracing adapter.
//
// Requests are mandatory and confirmed: Do returns messaging.ErrUnroutable
// at once when nothing is bound to the address. Payloads are JSON unless
// Options.Codec says otherwise; the requester encodes its own payload, so a
// serialization-decorated connector passes it through unchanged.
package request
