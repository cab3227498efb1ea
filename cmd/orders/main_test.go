package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
)

// TestOrdersShipEndToEnd runs the example service against the local RabbitMQ and
// MariaDB, places orders over HTTP and waits for each to be shipped and recorded.
func TestOrdersShipEndToEnd(t *testing.T) {
	amqpURL := testenv.Broker(t)
	db := testenv.MySQL(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		done <- run(ctx, settings{amqp: amqpURL, dsn: testenv.MySQLDSN, http: "127.0.0.1:0", ready: ready}, logger)
	}()
	var address string
	select {
	case address = <-ready:
	case err := <-done:
		t.Fatalf("the service stopped before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not start serving within 30s")
	}
	base := "http://" + address
	client := &http.Client{Timeout: 10 * time.Second}

	var ids []string
	for _, item := range []string{"book", "lamp", "kettle"} {
		response, err := client.Post(base+"/orders", "application/json", strings.NewReader(`{"item":"`+item+`","quantity":2}`))
		if err != nil {
			t.Fatal(err)
		}
		var view orderView
		_ = json.NewDecoder(response.Body).Decode(&view)
		_ = response.Body.Close()
		if response.StatusCode != http.StatusCreated || view.ID == "" || view.Status != "placed" {
			t.Fatalf("POST /orders: %d %+v", response.StatusCode, view)
		}
		ids = append(ids, view.ID)
	}

	response, err := client.Post(base+"/orders", "application/json", strings.NewReader(`{"item":""}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = response.Body.Close()
	if response.StatusCode != http.StatusBadRequest {
		t.Fatalf("an order without an item should be refused with 400, got %d", response.StatusCode)
	}

	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			var view orderView
			response, err := client.Get(base + "/orders/" + id)
			if err != nil {
				t.Fatal(err)
			}
			_ = json.NewDecoder(response.Body).Decode(&view)
			_ = response.Body.Close()
			if view.Status == "shipped" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("order %s is %q after 30s, want shipped", id, view.Status)
			}
			time.Sleep(50 * time.Millisecond) // polling a real service
		}
	}
	for _, id := range ids {
		for {
			var recorded int
			if err := db.QueryRow("SELECT COUNT(*) FROM order_events WHERE order_id = ? AND event = 'order-shipped'", id).Scan(&recorded); err != nil {
				t.Fatal(err)
			}
			if recorded == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("order-shipped for %s was not recorded within 30s", id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	response, err = client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(response.Body)
	_ = response.Body.Close()
	for _, metric := range []string{"outbox_stored_total", "outbox_confirmed_total", "consumer_acknowledged_total", "amqp_publish_total"} {
		if !strings.Contains(string(body), metric) {
			t.Errorf("/metrics lacks %s", metric)
		}
	}
	response, err = client.Get(base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	_ = response.Body.Close()
	if response.StatusCode != http.StatusOK {
		t.Errorf("/status answered %d", response.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the service stopped with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the service did not stop within 20s of its context ending")
	}
}
