package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// TestOrdersShipEndToEnd runs the example service against the local RabbitMQ and
// MariaDB, places 100 orders over HTTP and waits for each to be shipped and
// recorded; then places more, stops the service at once, and checks that a
// restarted service ships those too: nothing committed is lost at shutdown.
func TestOrdersShipEndToEnd(t *testing.T) {
	amqpURL := testenv.Broker(t)
	db := testenv.MySQL(t)
	client := &http.Client{Timeout: 10 * time.Second}

	service := startService(t, amqpURL)
	base := "http://" + service.address

	ids := placeOrders(t, client, base, 100)

	response, err := client.Post(base+"/orders", "application/json", strings.NewReader(`{"item":""}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = response.Body.Close()
	if response.StatusCode != http.StatusBadRequest {
		t.Fatalf("an order without an item should be refused with 400, got %d", response.StatusCode)
	}

	waitShipped(t, client, base, ids)
	waitRecorded(t, db, ids)
	waitProjected(t, db, ids)

	response, err = client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(response.Body)
	_ = response.Body.Close()
	for _, metric := range []string{"outbox_stored_total", "outbox_confirmed_total", "consumer_acknowledged_total", "amqp_publish_total", "consumer_batch_seconds"} {
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

	// Orders placed just before the signal: committed, perhaps not yet shipped.
	late := placeOrders(t, client, base, 20)
	service.stop(t)

	// The restarted service is given a node that is down before the real
	// one, as a cluster's addresses would be: it must go on to the next.
	restarted := startService(t, "amqp://guest:guest@127.0.0.1:1/ "+amqpURL)
	waitShipped(t, client, "http://"+restarted.address, late)
	waitRecorded(t, db, late)
	waitProjected(t, db, late) // the restarted projection went on from its checkpoint
	restarted.stop(t)
}

type runningService struct {
	address string
	cancel  context.CancelFunc
	done    chan error
}

func startService(t *testing.T, amqpURL string) *runningService {
	t.Helper()
	return startServiceWith(t, settings{amqp: amqpURL, dsn: testenv.MySQLDSN}, io.Discard)
}

// startServiceWith runs the service with s (listening on a free port), its log
// written to logs.
func startServiceWith(t *testing.T, s settings, logs io.Writer) *runningService {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logger := slog.New(slog.NewTextHandler(logs, nil))
	s.http, s.ready = "127.0.0.1:0", ready
	go func() {
		done <- run(ctx, s, logger)
	}()
	select {
	case address := <-ready:
		s := &runningService{address: address, cancel: cancel, done: done}
		t.Cleanup(func() { cancel() })
		return s
	case err := <-done:
		cancel()
		t.Fatalf("the service stopped before serving: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the service did not start serving within 30s")
	}
	return nil
}

// stop is what SIGTERM does: the service's context ends. It must return within
// the shutdown bound.
func (s *runningService) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("the service stopped with %v", err)
		}
	case <-time.After(shutdownLimit + 10*time.Second):
		t.Fatalf("the service did not stop within %s of its context ending", shutdownLimit+10*time.Second)
	}
}

func placeOrders(t *testing.T, client *http.Client, base string, count int) []string {
	t.Helper()
	var ids []string
	for i := range count {
		response, err := client.Post(base+"/orders", "application/json", strings.NewReader(`{"item":"item-`+strconv.Itoa(i)+`","quantity":2}`))
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
	return ids
}

func waitShipped(t *testing.T, client *http.Client, base string, ids []string) {
	t.Helper()
	eachOf(t, ids, "every order shipped", func(id string) (bool, string) {
		var view orderView
		response, err := client.Get(base + "/orders/" + id)
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(response.Body).Decode(&view)
		_ = response.Body.Close()
		return view.Status == "shipped", fmt.Sprintf("order %s is %q", id, view.Status)
	})
}

// eachOf waits, at most 60 s for them all, until done holds for each of ids
// in turn; done says, while it does not hold, what it saw.
func eachOf(t *testing.T, ids []string, what string, done func(id string) (bool, string)) {
	t.Helper()
	pending := ids
	eventually(t, 60*time.Second, what, func() (bool, string) {
		for len(pending) > 0 {
			if ok, saw := done(pending[0]); !ok {
				return false, fmt.Sprintf("%s (%d of %d left)", saw, len(pending), len(ids))
			}
			pending = pending[1:]
		}
		return true, ""
	})
}

// waitProjected waits until the shipment log's projection, reading the
// orders.shipments stream, has applied every one of ids.
func waitProjected(t *testing.T, db *sql.DB, ids []string) {
	t.Helper()
	eachOf(t, ids, "every order in the shipment log's projection", func(id string) (bool, string) {
		var offset int64
		err := db.QueryRow("SELECT stream_offset FROM shipment_log WHERE order_id = ?", id).Scan(&offset)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		return err == nil, "order " + id + " is not in it"
	})
}

func waitRecorded(t *testing.T, db *sql.DB, ids []string) {
	t.Helper()
	eachOf(t, ids, "order-shipped recorded once for every order", func(id string) (bool, string) {
		var recorded int
		if err := db.QueryRow("SELECT COUNT(*) FROM order_events WHERE order_id = ? AND event = 'order-shipped'", id).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		return recorded == 1, fmt.Sprintf("order %s has %d", id, recorded)
	})
}

// TestARedeliveredOrderIsShippedOnce publishes one order-placed message twice
// with one message id, as a publisher that lost its confirm would: the
// shipper's idempotency claim (written in its transaction) makes the second
// a duplicate, accepted without running the handler again.
func TestARedeliveredOrderIsShippedOnce(t *testing.T) {
	amqpURL := testenv.Broker(t)
	db := testenv.MySQL(t)
	client := &http.Client{Timeout: 10 * time.Second}
	service := startService(t, amqpURL)
	defer service.stop(t)

	transport := rabbitmq.New(rabbitmq.Options.Address(amqpURL))
	defer transport.Close()
	writer := batch.New(transport)
	defer writer.Close()
	id := messaging.NewID()
	placed := messaging.Dispatch{Topic: placedTopic, MessageID: id, MessageType: placedTopic, Mandatory: true,
		ContentType: "application/json", Payload: []byte(`{"order_id":"` + id + `","item":"book","quantity":1}`)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 2 {
		if _, err := writer.Write(ctx, placed); err != nil {
			t.Fatal(err)
		}
	}

	eventually(t, 30*time.Second, "the second copy answered as a duplicate", func() (bool, string) {
		var confirmed bool
		err := db.QueryRowContext(ctx, "SELECT confirmed FROM acemq_idempotency WHERE `key` = ?", id).Scan(&confirmed)
		return err == nil && confirmed && duplicates(t, client, "http://"+service.address) >= 1,
			fmt.Sprintf("claim confirmed %v (%v)", confirmed, err)
	})
}

// duplicates reads idempotency_total{outcome="duplicate"} for the ship queue
// from /metrics.
func duplicates(t *testing.T, client *http.Client, base string) int {
	response, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(response.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "idempotency_total{") && strings.Contains(line, `outcome="duplicate"`) && strings.Contains(line, shipQueue) {
			var n float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &n); err == nil {
				return int(n)
			}
		}
	}
	return 0
}

// TestAForeignMessageOnTheShipmentStreamIsParkedAndPassed publishes a body that
// is not an order-shipped event to the order-shipped exchange: the projection
// parks it in orders.shipments.parked and its checkpoint moves past it, so
// the orders after it are projected and a restart does not park it again.
func TestAForeignMessageOnTheShipmentStreamIsParkedAndPassed(t *testing.T) {
	amqpURL := testenv.Broker(t)
	db := testenv.MySQL(t)
	client := &http.Client{Timeout: 10 * time.Second}
	service := startService(t, amqpURL)
	defer service.stop(t)

	transport := rabbitmq.New(rabbitmq.Options.Address(amqpURL))
	defer transport.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declarer, _ := messaging.As[messaging.Declarer](conn)
	parked := func() int {
		state, err := declarer.InspectQueue(ctx, shipmentStream+".parked")
		if err != nil {
			t.Fatal(err)
		}
		return state.Messages
	}
	before := parked() // the queue is durable: earlier runs may have left copies

	writer := batch.New(transport)
	defer writer.Close()
	foreign := messaging.Dispatch{Topic: shippedTopic, MessageID: "foreign-" + messaging.NewID(), MessageType: "something-else",
		Mandatory: true, Headers: map[string]any{"x-odd": int64(-1)}, Payload: []byte("\x00\xffnot json")}
	if _, err := writer.Write(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	ids := placeOrders(t, client, "http://"+service.address, 3)
	waitProjected(t, db, ids) // the projection went on past the foreign message

	eventually(t, 30*time.Second, "the foreign message parked once", func() (bool, string) {
		n := parked()
		return n == before+1, fmt.Sprintf("%s.parked holds %d, want %d", shipmentStream, n, before+1)
	})
}
