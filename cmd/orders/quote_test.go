package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/patterns/request"
)

// TestQuoteIsAnsweredThroughRequestAndReply: the running service prices an
// order through its quote responder on RabbitMQ; an unknown order is a 404.
func TestQuoteIsAnsweredThroughRequestAndReply(t *testing.T) {
	amqpURL := testenv.Broker(t)
	_ = testenv.MySQL(t)
	client := &http.Client{Timeout: 10 * time.Second}
	service := startService(t, amqpURL)
	defer service.stop(t)
	base := "http://" + service.address

	ids := placeOrders(t, client, base, 2) // item-0 and item-1, quantity 2 each
	for _, id := range ids {
		response, err := client.Get(base + "/orders/" + id + "/quote")
		if err != nil {
			t.Fatal(err)
		}
		var quote Quote
		_ = json.NewDecoder(response.Body).Decode(&quote)
		_ = response.Body.Close()
		if response.StatusCode != http.StatusOK || quote.OrderID != id || quote.Quantity != 2 ||
			quote.UnitCents != defaultUnitCents || quote.TotalCents != 2*defaultUnitCents {
			t.Errorf("quote for %s: %d %+v", id, response.StatusCode, quote)
		}
	}
	response, err := client.Get(base + "/orders/no-such-order/quote")
	if err != nil {
		t.Fatal(err)
	}
	_ = response.Body.Close()
	if response.StatusCode != http.StatusNotFound {
		t.Errorf("quote for an unknown order: %d; want 404", response.StatusCode)
	}
}

// fakeQuotes answers getQuote with a fixed reply or error.
type fakeQuotes struct {
	quote quoteWire
	err   error
}

func (f fakeQuotes) Do(context.Context, QuoteRequest) (quoteWire, error) { return f.quote, f.err }

// TestQuoteStatusCodes: a responder failure is a 503 that does not show its
// text, a timeout a 504.
func TestQuoteStatusCodes(t *testing.T) {
	for _, c := range []struct {
		name  string
		quote fakeQuotes
		want  int
	}{
		{"answered", fakeQuotes{quote: quoteWire{Quote: Quote{OrderID: "o"}, Found: true}}, http.StatusOK},
		{"unknown", fakeQuotes{quote: quoteWire{Quote: Quote{OrderID: "o"}}}, http.StatusNotFound},
		{"responder failed", fakeQuotes{err: &request.ResponderError{Text: "the quote service cannot read the order: dial tcp"}}, http.StatusServiceUnavailable},
		{"timed out", fakeQuotes{err: errors.Join(request.ErrRequestTimedOut)}, http.StatusGatewayTimeout},
	} {
		api := &ordersAPI{logger: slog.New(slog.NewTextHandler(io.Discard, nil)), quotes: c.quote}
		recorder := httptest.NewRecorder()
		api.routes().ServeHTTP(recorder, httptest.NewRequest(http.MethodGet, "/orders/o/quote", nil))
		if recorder.Code != c.want {
			t.Errorf("%s: %d; want %d", c.name, recorder.Code, c.want)
		}
		if c.want == http.StatusServiceUnavailable && strings.Contains(recorder.Body.String(), "dial tcp") {
			t.Errorf("%s: the client sees the responder's error: %s", c.name, recorder.Body)
		}
	}
}
