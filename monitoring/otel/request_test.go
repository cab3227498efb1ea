package otel

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/request"
)

type priceAsked struct {
	SKU string `json:"sku"`
}

type priceGiven struct {
	Cents int `json:"cents"`
}

// TestARequestIsAClientSpanAndItsServingAServerSpanOfOneTrace asks through
// Ask and serves through Respond on the memory transport, the requester
// writing through Transport: the CLIENT span is the caller's child, the
// request's publish the CLIENT span's, the SERVER span the publish's. A
// request the responder fails marks both spans failed.
func TestARequestIsAClientSpanAndItsServingAServerSpanOfOneTrace(t *testing.T) {
	rec := newRecorder()
	tracing := New(Options.TracerProvider(rec.provider))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	broker := memory.New(memory.Options.Logger(quiet))
	defer broker.Close()
	transport := tracing.Transport(broker)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	price := func(_ context.Context, _ messaging.Delivery, asked priceAsked) (priceGiven, error) {
		if asked.SKU == "missing" {
			return priceGiven{}, errors.New("no such product")
		}
		return priceGiven{Cents: 100 + len(asked.SKU)}, nil
	}
	server, err := request.Serve(ctx, transport, "prices", Respond(tracing, price), request.Options.Logger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	requester, err := request.NewRequester[priceAsked, priceGiven](ctx, transport, "", "prices", request.Options.Logger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer requester.Close()

	callerCtx, caller := rec.provider.Tracer("test").Start(ctx, "caller")
	given, err := Ask(callerCtx, tracing, requester, "prices", priceAsked{SKU: "book"})
	if err != nil || given.Cents != 104 {
		t.Fatalf("Ask = %+v, %v; want 104 cents", given, err)
	}
	_, err = Ask(callerCtx, tracing, requester, "prices", priceAsked{SKU: "missing"})
	var failed *request.ResponderError
	if !errors.As(err, &failed) {
		t.Fatalf("Ask of a missing product = %v; want the responder's error", err)
	}
	caller.End()
	if err := server.Close(); err != nil {
		t.Fatal(err)
	}

	clients := rec.named("prices request")
	serves := rec.named("prices serve")
	if len(clients) != 2 || len(serves) != 2 {
		t.Fatalf("%d request and %d serve spans; want 2 of each: %v", len(clients), len(serves), spanNames(rec.spans()))
	}
	for i, client := range clients {
		if client.SpanKind != trace.SpanKindClient || client.Parent.SpanID() != caller.SpanContext().SpanID() {
			t.Errorf("request %d: kind %v, parent %v; want a CLIENT span under the caller", i, client.SpanKind, client.Parent.SpanID())
		}
		publish, ok := childOf(rec, client.SpanContext, "prices publish")
		if !ok {
			t.Errorf("request %d: no publish span under it: %v", i, spanNames(rec.spans()))
			continue
		}
		serve, ok := childOf(rec, publish.SpanContext, "prices serve")
		if !ok || serve.SpanKind != trace.SpanKindServer {
			t.Errorf("request %d: no SERVER span under its publish", i)
		}
		outcome := attributes(client.Attributes)["messaging.acemq.outcome"]
		switch i {
		case 0:
			if outcome != "answered" || client.Status.Code == codes.Error || serve.Status.Code == codes.Error {
				t.Errorf("the answered request: outcome %v, statuses %v and %v", outcome, client.Status.Code, serve.Status.Code)
			}
		case 1:
			if outcome != "failed" || client.Status.Code != codes.Error || serve.Status.Code != codes.Error {
				t.Errorf("the failed request: outcome %v, statuses %v and %v", outcome, client.Status.Code, serve.Status.Code)
			}
		}
	}
}

func childOf(rec recorder, parent trace.SpanContext, name string) (stub tracetest.SpanStub, ok bool) {
	for _, span := range rec.named(name) {
		if span.Parent.SpanID() == parent.SpanID() {
			return span, true
		}
	}
	return stub, false
}
