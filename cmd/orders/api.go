package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/status"
)

// ordersAPI is the HTTP face of the service.
type ordersAPI struct {
	db       *sql.DB
	outbox   messaging.Connection
	checker  *status.Checker
	registry *prom.Registry
}

func newOrdersAPI(ctx context.Context, db *sql.DB, outbox messaging.Connector, checker *status.Checker, registry *prom.Registry) (*ordersAPI, error) {
	connection, err := outbox.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("open the outbox: %w", err)
	}
	return &ordersAPI{db: db, outbox: connection, checker: checker, registry: registry}, nil
}

func (a *ordersAPI) close() { _ = a.outbox.Close() }

func (a *ordersAPI) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", a.placeOrder)
	mux.HandleFunc("GET /orders/{id}", a.getOrder)
	mux.HandleFunc("GET /status", a.status)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{}))
	return mux
}

type placeOrderRequest struct {
	Item     string `json:"item"`
	Quantity int    `json:"quantity"`
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
func (a *ordersAPI) placeOrder(w http.ResponseWriter, r *http.Request) {
	var req placeOrderRequest
	decoder := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	if err := decoder.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "the body must be JSON like {\"item\":\"book\",\"quantity\":1}: "+err.Error())
		return
	}
	req.Item = strings.TrimSpace(req.Item)
	if req.Item == "" || req.Quantity <= 0 {
		writeError(w, http.StatusBadRequest, "item must be non-empty and quantity positive")
		return
	}
	order := OrderPlaced{OrderID: messaging.NewID(), Item: req.Item, Quantity: req.Quantity}
	if err := a.store(r.Context(), order); err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, orderView{ID: order.OrderID, Item: order.Item, Quantity: order.Quantity, Status: "placed"})
}

func (a *ordersAPI) store(ctx context.Context, order OrderPlaced) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ctx, slot := messaging.WithTransactionSlot(ctx)
	writer, err := a.outbox.CommitWriter(ctx)
	if err != nil {
		return fmt.Errorf("begin the order transaction: %w", err)
	}
	defer writer.Close()
	if _, err := slot.Tx.ExecContext(ctx,
		"INSERT INTO orders (id, item, quantity, status, placed_at) VALUES (?, ?, ?, 'placed', ?)",
		order.OrderID, order.Item, order.Quantity, time.Now().UTC()); err != nil {
		_ = writer.Rollback()
		return fmt.Errorf("store the order: %w", err)
	}
	if _, err := writer.Write(ctx, messaging.Dispatch{Message: order}); err != nil {
		_ = writer.Rollback()
		return fmt.Errorf("queue order-placed: %w", err)
	}
	if err := writer.Commit(); err != nil {
		return fmt.Errorf("commit the order: %w", err)
	}
	return nil
}

func (a *ordersAPI) getOrder(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	view := orderView{ID: id}
	var placed time.Time
	var shipped sql.NullTime
	err := a.db.QueryRowContext(r.Context(),
		"SELECT item, quantity, status, placed_at, shipped_at FROM orders WHERE id = ?", id).
		Scan(&view.Item, &view.Quantity, &view.Status, &placed, &shipped)
	if errors.Is(err, sql.ErrNoRows) {
		writeError(w, http.StatusNotFound, "no order "+id)
		return
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "read the order: "+err.Error())
		return
	}
	view.PlacedAt = &placed
	if shipped.Valid {
		view.ShippedAt = &shipped.Time
	}
	writeJSON(w, http.StatusOK, view)
}

func (a *ordersAPI) status(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := a.checker.Status(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "failing", "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func writeJSON(w http.ResponseWriter, code int, value any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(value)
}

func writeError(w http.ResponseWriter, code int, message string) {
	writeJSON(w, code, map[string]string{"error": message})
}
