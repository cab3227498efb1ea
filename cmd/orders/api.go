package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-sql-driver/mysql"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/status"
)

// storeTimeout bounds storing one order; the server's write timeout is longer.
const storeTimeout = 10 * time.Second

// unavailable is all a client learns of a database failure: the details go to
// the log, where the operator needs them.
const unavailable = "the order service cannot reach its database just now; try again shortly (send an Idempotency-Key to retry safely)"

// inDoubt is what a client learns when the database could not say whether
// the order was stored: retrying with the same key finds it if it was.
const inDoubt = "the order service could not confirm that your order was stored; send the same request again with the same Idempotency-Key, which finds the order if it was"

// errKeyReused reports an Idempotency-Key already used for a different order.
var errKeyReused = errors.New("the Idempotency-Key was already used for a different order")

// ordersAPI is the HTTP face of the service.
type ordersAPI struct {
	db       *sql.DB
	outbox   messaging.Connection
	checker  *status.Checker
	registry *prom.Registry
	logger   *slog.Logger
	maxBody  int64
	// quotes asks the quote responder (nil: GET /orders/{id}/quote is 503).
	quotes quotes
}

func newOrdersAPI(ctx context.Context, db *sql.DB, outbox messaging.Connector, checker *status.Checker,
	registry *prom.Registry, logger *slog.Logger, maxBody int64) (*ordersAPI, error) {
	connection, err := outbox.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("open the outbox: %w", err)
	}
	return &ordersAPI{db: db, outbox: connection, checker: checker, registry: registry, logger: logger, maxBody: maxBody}, nil
}

func (a *ordersAPI) close() { _ = a.outbox.Close() }

func (a *ordersAPI) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", a.placeOrder)
	mux.HandleFunc("GET /orders/{id}", a.getOrder)
	mux.HandleFunc("GET /orders/{id}/quote", a.getQuote)
	mux.HandleFunc("GET /status", a.status)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{}))
	return mux
}

type orderView struct {
	ID        string     `json:"id"`
	Item      string     `json:"item,omitempty"`
	Quantity  int        `json:"quantity,omitempty"`
	Status    string     `json:"status"`
	PlacedAt  *time.Time `json:"placed_at,omitempty"`
	ShippedAt *time.Time `json:"shipped_at,omitempty"`
}

// placeOrder stores the order and its order-placed message in one transaction.
// With an Idempotency-Key the key is stored in that transaction too, so a
// retry finds the first order whether or not its response arrived: 201 for the
// order created, 200 (and Idempotent-Replayed: true) for a retry. When the
// COMMIT loses its connection, the outbox finds out whether it committed: 201
// when the order was stored, 503 when it was not or the database could not
// say.
func (a *ordersAPI) placeOrder(w http.ResponseWriter, r *http.Request) {
	key, problem := idempotencyKey(r.Header)
	if problem != nil {
		writeProblem(w, problem)
		return
	}
	request, problem := decodeOrder(http.MaxBytesReader(w, r.Body, a.maxBody), a.maxBody)
	if problem != nil {
		writeProblem(w, problem)
		return
	}
	order := OrderPlaced{OrderID: messaging.NewID(), Item: request.Item, Quantity: request.Quantity}
	view, replayed, err := a.store(r.Context(), key, order)
	switch {
	case errors.Is(err, errKeyReused):
		writeProblem(w, &requestError{status: http.StatusUnprocessableEntity, field: idempotencyHeader,
			message: errKeyReused.Error() + "; use a new key for a new order"})
	case errors.Is(err, sqlmq.ErrCommitUnknown):
		a.logger.Error("orders: could not tell whether an order was stored", "error", err)
		writeError(w, http.StatusServiceUnavailable, inDoubt)
	case err != nil:
		a.logger.Error("orders: could not store an order", "error", err)
		writeError(w, http.StatusServiceUnavailable, unavailable)
	case replayed:
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, view)
	default:
		writeJSON(w, http.StatusCreated, view)
	}
}

// store writes the order, with its key when there is one; when the key is
// already stored, it returns the order stored with it instead (replayed).
func (a *ordersAPI) store(ctx context.Context, key string, order OrderPlaced) (orderView, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	ctx, slot := messaging.WithTransactionSlot(ctx)
	writer, err := a.outbox.CommitWriter(ctx)
	if err != nil {
		return orderView{}, false, fmt.Errorf("begin the order transaction: %w", err)
	}
	defer writer.Close()
	placedAt := time.Now().UTC().Truncate(time.Millisecond)
	if key != "" {
		// A concurrent request with the same key waits here on the key's row
		// lock, then finds the key stored (1062) once the first commits.
		_, err := slot.Tx.ExecContext(ctx,
			"INSERT INTO order_requests (idempotency_key, order_id, created_at) VALUES (?, ?, ?)",
			key, order.OrderID, placedAt)
		var mysqlErr *mysql.MySQLError
		if errors.As(err, &mysqlErr) && mysqlErr.Number == mysqlDuplicateKey {
			_ = writer.Rollback()
			return a.replay(ctx, key, order)
		}
		if err != nil {
			_ = writer.Rollback()
			return orderView{}, false, fmt.Errorf("store the idempotency key: %w", err)
		}
	}
	if _, err := slot.Tx.ExecContext(ctx,
		"INSERT INTO orders (id, item, quantity, status, placed_at) VALUES (?, ?, ?, 'placed', ?)",
		order.OrderID, order.Item, order.Quantity, placedAt); err != nil {
		_ = writer.Rollback()
		return orderView{}, false, fmt.Errorf("store the order: %w", err)
	}
	if _, err := writer.Write(ctx, messaging.Dispatch{Message: order}); err != nil {
		_ = writer.Rollback()
		return orderView{}, false, fmt.Errorf("queue order-placed: %w", err)
	}
	if err := writer.Commit(); err != nil {
		return orderView{}, false, fmt.Errorf("commit the order: %w", err)
	}
	return orderView{ID: order.OrderID, Item: order.Item, Quantity: order.Quantity, Status: "placed", PlacedAt: &placedAt}, false, nil
}

// replay returns the order stored with key, provided it is the same order.
func (a *ordersAPI) replay(ctx context.Context, key string, order OrderPlaced) (orderView, bool, error) {
	view, err := a.readOrder(ctx,
		"SELECT o.id, o.item, o.quantity, o.status, o.placed_at, o.shipped_at FROM order_requests r JOIN orders o ON o.id = r.order_id WHERE r.idempotency_key = ?",
		key)
	if err != nil {
		return orderView{}, false, fmt.Errorf("read the order stored with an idempotency key: %w", err)
	}
	if view.Item != order.Item || view.Quantity != order.Quantity {
		return orderView{}, false, errKeyReused
	}
	return view, true, nil
}

func (a *ordersAPI) readOrder(ctx context.Context, query string, arg string) (orderView, error) {
	var view orderView
	var placed time.Time
	var shipped sql.NullTime
	err := a.db.QueryRowContext(ctx, query, arg).
		Scan(&view.ID, &view.Item, &view.Quantity, &view.Status, &placed, &shipped)
	if err != nil {
		return orderView{}, err
	}
	view.PlacedAt = &placed
	if shipped.Valid {
		view.ShippedAt = &shipped.Time
	}
	return view, nil
}

func (a *ordersAPI) getOrder(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	view, err := a.readOrder(ctx, "SELECT id, item, quantity, status, placed_at, shipped_at FROM orders WHERE id = ?", id)
	if errors.Is(err, sql.ErrNoRows) {
		writeError(w, http.StatusNotFound, "no order with this id")
		return
	}
	if err != nil {
		a.logger.Error("orders: could not read an order", "error", err)
		writeError(w, http.StatusServiceUnavailable, unavailable)
		return
	}
	writeJSON(w, http.StatusOK, view)
}

// status serves the checker's report: 200 when the broker, the database and
// the consumer answer, else 503; the JSON says which failed and why.
func (a *ordersAPI) status(w http.ResponseWriter, r *http.Request) { a.checker.ServeHTTP(w, r) }

func writeJSON(w http.ResponseWriter, code int, value any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(value)
}

func writeError(w http.ResponseWriter, code int, message string) {
	writeJSON(w, code, map[string]string{"error": message})
}

func writeProblem(w http.ResponseWriter, problem *requestError) {
	body := map[string]string{"error": problem.message}
	if problem.field != "" {
		body["field"] = problem.field
	}
	writeJSON(w, problem.status, body)
}
