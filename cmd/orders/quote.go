package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/request"
)

// Quotes are answered through request and reply: the HTTP handler asks, and a
// responder in the same service (it could as well be another one) prices the
// order from the database and answers on the caller's reply queue.
const (
	quoteQueue = "orders.quote"
	// quoteTimeout is how long GET /orders/{id}/quote waits for the answer;
	// the server's write timeout is longer.
	quoteTimeout = 5 * time.Second
	// defaultUnitCents prices an item that is not in the price list.
	defaultUnitCents = 1000
)

// unitCents is the example's price list.
var unitCents = map[string]int{"book": 1299, "lamp": 3450, "kettle": 2500, "desk": 18900}

// QuoteRequest asks what an order costs.
type QuoteRequest struct {
	OrderID string `json:"order_id"`
}

// Quote is what an order costs, as GET /orders/{id}/quote answers it.
type Quote struct {
	OrderID    string `json:"order_id"`
	Item       string `json:"item,omitempty"`
	Quantity   int    `json:"quantity,omitempty"`
	UnitCents  int    `json:"unit_cents,omitempty"`
	TotalCents int    `json:"total_cents,omitempty"`
}

// quoteWire is the reply: the Quote, and whether the order exists (an
// unknown order is an answer, not a failure).
type quoteWire struct {
	Quote
	Found bool `json:"found"`
}

// priceOrders is the responder: an unknown order is an answer (Found false),
// a database failure is an error reply, so the caller hears it at once and
// the request is dead-lettered in orders.quote.dlq for the operator.
func priceOrders(db *sql.DB) request.Func[QuoteRequest, quoteWire] {
	return func(ctx context.Context, _ messaging.Delivery, r QuoteRequest) (quoteWire, error) {
		q := quoteWire{Quote: Quote{OrderID: r.OrderID}}
		err := db.QueryRowContext(ctx, "SELECT item, quantity FROM orders WHERE id = ?", r.OrderID).Scan(&q.Item, &q.Quantity)
		if errors.Is(err, sql.ErrNoRows) {
			return q, nil
		}
		if err != nil {
			return q, fmt.Errorf("the quote service cannot read the order: %w", err)
		}
		q.Found = true
		q.UnitCents = defaultUnitCents
		if cents, ok := unitCents[q.Item]; ok {
			q.UnitCents = cents
		}
		q.TotalCents = q.UnitCents * q.Quantity
		return q, nil
	}
}

// quotes is the asking side, as the HTTP API uses it.
type quotes interface {
	Do(ctx context.Context, r QuoteRequest) (quoteWire, error)
}

// startQuotes serves orders.quote and opens the requester the API asks with.
// stop closes both, the requester first.
func startQuotes(ctx context.Context, transport messaging.Connector, db *sql.DB, logger *slog.Logger, options ...request.Option) (asker quotes, stop func(), err error) {
	options = append([]request.Option{request.Options.Logger(logger)}, options...)
	server, err := request.Serve(ctx, transport, quoteQueue, priceOrders(db), append(options, request.Options.Workers(2))...)
	if err != nil {
		return nil, nil, fmt.Errorf("serve quotes: %w", err)
	}
	requester, err := request.NewRequester[QuoteRequest, quoteWire](ctx, transport, "", quoteQueue,
		append(options, request.Options.Timeout(quoteTimeout))...)
	if err != nil {
		_ = server.Close()
		return nil, nil, fmt.Errorf("open the quote requester: %w", err)
	}
	return requester, func() {
		_ = requester.Close()
		_ = server.Close()
	}, nil
}

// getQuote answers GET /orders/{id}/quote through request and reply: 200 with
// the quote, 404 for no such order, 504 when no answer came in time, 503 when
// the quote service failed.
func (a *ordersAPI) getQuote(w http.ResponseWriter, r *http.Request) {
	if a.quotes == nil {
		writeError(w, http.StatusServiceUnavailable, "quotes are not served by this instance")
		return
	}
	q, err := a.quotes.Do(r.Context(), QuoteRequest{OrderID: r.PathValue("id")})
	switch {
	case errors.Is(err, request.ErrRequestTimedOut):
		a.logger.Warn("orders: no quote came back in time", "error", err)
		writeError(w, http.StatusGatewayTimeout, "the quote service did not answer in time; try again shortly")
	case err != nil:
		a.logger.Error("orders: the quote failed", "error", err)
		writeError(w, http.StatusServiceUnavailable, "the quote service cannot answer just now; try again shortly")
	case !q.Found:
		writeError(w, http.StatusNotFound, "no order with this id")
	default:
		writeJSON(w, http.StatusOK, q.Quote)
	}
}
