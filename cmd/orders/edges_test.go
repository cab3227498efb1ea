package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

type response struct {
	code   int
	body   string
	header http.Header
}

func (r response) view(t *testing.T) orderView {
	t.Helper()
	var view orderView
	if err := json.Unmarshal([]byte(r.body), &view); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
	return view
}

func (r response) problem(t *testing.T) map[string]string {
	t.Helper()
	var problem map[string]string
	r.decode(t, &problem)
	return problem
}

func (r response) decode(t *testing.T, value any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), value); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

func post(t *testing.T, client *http.Client, base, body, key string) response {
	t.Helper()
	request, err := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	request.Header.Set("Content-Type", "application/json")
	if key != "" {
		request.Header.Set(idempotencyHeader, key)
	}
	return do(t, client, request)
}

func get(t *testing.T, client *http.Client, url string) response {
	t.Helper()
	request, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, client, request)
}

func do(t *testing.T, client *http.Client, request *http.Request) response {
	t.Helper()
	reply, err := client.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	defer reply.Body.Close()
	text, _ := io.ReadAll(reply.Body)
	return response{code: reply.StatusCode, body: string(text), header: reply.Header}
}

// TestBadInputIsA400NamingTheField: what the columns cannot hold, or what is
// not one JSON object of the known fields, never reaches MariaDB.
func TestBadInputIsA400NamingTheField(t *testing.T) {
	amqpURL := testenv.Broker(t)
	testenv.MySQL(t)
	service := startService(t, amqpURL)
	base := "http://" + service.address
	client := &http.Client{Timeout: 10 * time.Second}

	for _, c := range []struct{ body, field string }{
		{`{"item":"book","quantity":2147483648}`, "quantity"},
		{`{"item":"book","quantity":-2147483649}`, "quantity"},
		{`{"item":"book","quantity":1.5}`, "quantity"},
		{`{"item":"` + strings.Repeat("x", 256) + `","quantity":1}`, "item"},
		{`{"item":"","quantity":1}`, "item"},
		{`{"item":"book","quantity":1,"coupon":"free"}`, "coupon"},
		{`{"item":"book","quantity":1}{"item":"book","quantity":1}`, ""},
		{`{"item":"book","quantity":1}garbage`, ""},
	} {
		reply := post(t, client, base, c.body, "")
		if reply.code != http.StatusBadRequest {
			t.Errorf("%.60s: %d %s, want 400", c.body, reply.code, reply.body)
			continue
		}
		if field := reply.problem(t)["field"]; field != c.field {
			t.Errorf("%.60s: field %q, want %q (%s)", c.body, field, c.field, reply.body)
		}
		for _, databaseText := range []string{"Error 1", "Out of range", "Data too long", "MariaDB", "SQL"} {
			if strings.Contains(reply.body, databaseText) {
				t.Errorf("%.60s: the answer quotes the database: %s", c.body, reply.body)
			}
		}
	}

	// The largest values the columns hold are accepted and stored as sent.
	item := strings.Repeat("€", 255)
	reply := post(t, client, base, `{"item":"`+item+`","quantity":2147483647}`, "")
	if reply.code != http.StatusCreated {
		t.Fatalf("the largest order the columns hold: %d %s", reply.code, reply.body)
	}
	stored := get(t, client, base+"/orders/"+reply.view(t).ID).view(t)
	if stored.Item != item || stored.Quantity != 2147483647 {
		t.Errorf("stored %q×%d, want 255 × € and 2147483647", stored.Item, stored.Quantity)
	}
}

// TestARetryWithTheSameIdempotencyKeyReturnsTheFirstOrder: a retry after a lost
// response, and concurrent retries, create one order; the key is limited.
func TestARetryWithTheSameIdempotencyKeyReturnsTheFirstOrder(t *testing.T) {
	amqpURL := testenv.Broker(t)
	db := testenv.MySQL(t)
	service := startService(t, amqpURL)
	base := "http://" + service.address
	client := &http.Client{Timeout: 10 * time.Second}
	countOrders := func(key string) int {
		t.Helper()
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM order_requests r JOIN orders o ON o.id = r.order_id WHERE r.idempotency_key = ?", key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	key := messaging.NewID()
	first := post(t, client, base, `{"item":"lamp","quantity":3}`, key) // its response is "lost"
	if first.code != http.StatusCreated {
		t.Fatalf("first: %d %s", first.code, first.body)
	}
	retry := post(t, client, base, `{"item":"lamp","quantity":3}`, key)
	if retry.code != http.StatusOK || retry.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %v %s, want 200 with Idempotent-Replayed", retry.code, retry.header, retry.body)
	}
	if first.view(t).ID != retry.view(t).ID {
		t.Fatalf("the retry returned order %s, the first was %s", retry.view(t).ID, first.view(t).ID)
	}
	if n := countOrders(key); n != 1 {
		t.Fatalf("%d orders for one key", n)
	}

	reused := post(t, client, base, `{"item":"kettle","quantity":1}`, key)
	if reused.code != http.StatusUnprocessableEntity || reused.problem(t)["field"] != idempotencyHeader {
		t.Errorf("a key reused for another order: %d %s, want 422 naming %s", reused.code, reused.body, idempotencyHeader)
	}
	if tooLong := post(t, client, base, `{"item":"lamp","quantity":3}`, strings.Repeat("k", maxKeyLength+1)); tooLong.code != http.StatusBadRequest {
		t.Errorf("a %d-character key: %d %s, want 400", maxKeyLength+1, tooLong.code, tooLong.body)
	}

	// Twenty clients retrying at once with one fresh key: one order.
	concurrent := messaging.NewID()
	replies := make([]response, 20)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = post(t, client, base, `{"item":"desk","quantity":1}`, concurrent)
		}()
	}
	wg.Wait()
	created, ids := 0, map[string]bool{}
	for _, reply := range replies {
		switch reply.code {
		case http.StatusCreated:
			created++
		case http.StatusOK:
		default:
			t.Fatalf("a concurrent retry: %d %s", reply.code, reply.body)
		}
		ids[reply.view(t).ID] = true
	}
	if created != 1 || len(ids) != 1 || countOrders(concurrent) != 1 {
		t.Fatalf("20 concurrent requests with one key: %d created, %d ids, %d orders; want 1, 1, 1", created, len(ids), countOrders(concurrent))
	}
}

// TestSlowClientsAreDroppedAfterTheReadTimeout: 200 clients that send headers
// and then dribble nothing of their body hold a goroutine each only until the
// server's read timeout; an idle keep-alive connection is closed after the
// idle timeout. The timeouts are longer than dialling 200 clients takes on a
// loaded machine, so every client is still held when they are counted.
func TestSlowClientsAreDroppedAfterTheReadTimeout(t *testing.T) {
	amqpURL := testenv.Broker(t)
	testenv.MySQL(t)
	const clients = 200
	limits := serverLimits{readHeaderTimeout: time.Second, readTimeout: 3 * time.Second, idleTimeout: 3 * time.Second}
	service := startServiceWith(t, settings{amqp: amqpURL, dsn: testenv.MySQLDSN, server: limits}, io.Discard)

	started := time.Now()
	conns := make([]net.Conn, 0, clients+1)
	t.Cleanup(func() {
		for _, conn := range conns {
			_ = conn.Close()
		}
	})
	for range clients {
		conn, err := net.DialTimeout("tcp", service.address, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		if _, err := fmt.Fprintf(conn, "POST /orders HTTP/1.1\r\nHost: orders\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"item\":"); err != nil {
			t.Fatal(err)
		}
	}
	idle, err := net.DialTimeout("tcp", service.address, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conns = append(conns, idle)
	fmt.Fprintf(idle, "GET /orders/none HTTP/1.1\r\nHost: orders\r\n\r\n")
	held := 0
	eventually(t, limits.readTimeout, "the slow clients to hold the server's goroutines (else the test did not load the server)", func() (bool, string) {
		held = max(held, servingGoroutines())
		return held >= clients*9/10, fmt.Sprintf("they held at most %d of %d", held, clients)
	})

	// Every connection must be answered (408 for the slow bodies) and closed
	// by the server, well before the clients' own 15 s deadline.
	statuses := map[int]int{}
	for i, conn := range conns {
		_ = conn.SetReadDeadline(started.Add(15 * time.Second))
		reader := bufio.NewReader(conn)
		reply, err := http.ReadResponse(reader, nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, reply.Body)
		_ = reply.Body.Close()
		statuses[reply.StatusCode]++
		if _, err := reader.ReadByte(); err != io.EOF {
			t.Fatalf("connection %d was not closed by the server: %v", i, err)
		}
	}
	dropped := time.Since(started)
	if statuses[http.StatusRequestTimeout] != clients || statuses[http.StatusNotFound] != 1 {
		t.Errorf("answers %v, want %d × 408 and the idle client's 404", statuses, clients)
	}
	if dropped > limits.readTimeout+5*time.Second {
		t.Errorf("the server took %s to drop clients it should drop after %s", dropped, limits.readTimeout)
	}
	eventually(t, 5*time.Second, "the connection goroutines to end after the clients were dropped", func() (bool, string) {
		after := servingGoroutines()
		return after == 0, fmt.Sprintf("%d are left", after)
	})
	t.Logf("%d slow clients held %d goroutines; they and 1 idle client were dropped after %s (read timeout %s, idle timeout %s)",
		clients, held, dropped.Round(time.Millisecond), limits.readTimeout, limits.idleTimeout)
}

// servingGoroutines counts the HTTP server's connection goroutines in this
// process (the test's clients are raw connections, not net/http).
func servingGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "net/http.(*conn).serve(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
