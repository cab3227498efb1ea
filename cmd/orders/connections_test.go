package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// maxConnections is what the service may hold at rest and under load: one
// publishing and one consuming connection, every part on channels of them.
const maxConnections = 2

// TestTheServiceHoldsAtMostTwoConnections counts, with rabbitmqctl, the AMQP
// connections of a running service (by its connection name) at rest and
// while it takes a few hundred orders, asks for quotes, answers /status and
// parks messages that do not decode: every part that talks to the broker is
// busy, and together they hold no more than two connections.
func TestTheServiceHoldsAtMostTwoConnections(t *testing.T) {
	amqpURL := testenv.Broker(t)
	testenv.MySQL(t)
	client := &http.Client{Timeout: 10 * time.Second}
	name := testenv.Name(t, "orders-connections")
	service := startServiceWith(t, settings{amqp: amqpURL, dsn: testenv.MySQLDSN, connectionName: name}, io.Discard)
	defer service.stop(t)
	base := "http://" + service.address

	warm := placeOrders(t, client, base, 5) // every part has connected once
	waitShipped(t, client, base, warm)
	askQuote(t, client, base, warm[0])
	rest := countConnections(t, name)
	t.Logf("at rest: %d AMQP connection(s) named %s", rest, name)

	sampler := startSampling(name)
	ids := placeConcurrently(t, client, base, 300, 8)
	parkForeignOrders(t, amqpURL, 3)
	for _, id := range ids[:10] {
		askQuote(t, client, base, id)
	}
	waitShipped(t, client, base, ids)
	peak, samples, err := sampler.stop()
	if err != nil {
		t.Fatalf("count the connections under load: %v", err)
	}
	after := countConnections(t, name)
	t.Logf("under load: at most %d AMQP connection(s) over %d samples; %d after it", peak, samples, after)

	if rest > maxConnections || peak > maxConnections || after > maxConnections {
		t.Fatalf("the service held %d connection(s) at rest, up to %d under load and %d after it; want at most %d each",
			rest, peak, after, maxConnections)
	}
	if samples == 0 {
		t.Fatal("no sample of the connections was taken under load")
	}
}

// countConnections is how many of the broker's connections carry name.
func countConnections(t *testing.T, name string) int {
	t.Helper()
	n, err := connectionsNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// connectionsNamed asks rabbitmqctl, within a minute, how many connections
// carry the connection_name client property name.
func connectionsNamed(name string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "rabbitmqctl", "-q", "list_connections", "client_properties").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("rabbitmqctl list_connections: %w\n%s", err, out)
	}
	return strings.Count(string(out), `{"connection_name","`+name+`"}`), nil
}

// sampling counts the connections named name over and over until stopped.
type sampling struct {
	cancel context.CancelFunc
	done   chan struct{}

	peak, samples int
	err           error
}

func startSampling(name string) *sampling {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampling{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			n, err := connectionsNamed(name)
			if err != nil {
				s.err = err
				return
			}
			s.peak, s.samples = max(s.peak, n), s.samples+1
		}
	}()
	return s
}

// stop ends the sampling after the sample in progress and returns the most
// connections seen and how many samples were taken.
func (s *sampling) stop() (peak, samples int, err error) {
	s.cancel()
	<-s.done
	return s.peak, s.samples, s.err
}

// placeConcurrently places count orders from workers clients at once.
func placeConcurrently(t *testing.T, client *http.Client, base string, count, workers int) []string {
	t.Helper()
	var (
		mu     sync.Mutex
		ids    []string
		failed error
		wg     sync.WaitGroup
	)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				id, err := placeOrder(client, base, i)
				mu.Lock()
				if err != nil && failed == nil {
					failed = err
				}
				if err == nil {
					ids = append(ids, id)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range count {
		next <- i
	}
	close(next)
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	return ids
}

func placeOrder(client *http.Client, base string, i int) (string, error) {
	response, err := client.Post(base+"/orders", "application/json", strings.NewReader(`{"item":"load-`+strconv.Itoa(i)+`","quantity":1}`))
	if err != nil {
		return "", err
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(response.Body)
	if response.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("POST /orders: %d %s", response.StatusCode, body)
	}
	const field = `"id":"`
	start := strings.Index(string(body), field)
	if start < 0 {
		return "", fmt.Errorf("POST /orders answered no id: %s", body)
	}
	id := string(body[start+len(field):])
	return id[:strings.IndexByte(id, '"')], nil
}

// askQuote asks for an order's quote and /status, as an operator would.
func askQuote(t *testing.T, client *http.Client, base, id string) {
	t.Helper()
	for _, path := range []string{"/orders/" + id + "/quote", "/status"} {
		response, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = response.Body.Close()
		if response.StatusCode != http.StatusOK {
			t.Fatalf("GET %s answered %d", path, response.StatusCode)
		}
	}
}

// parkForeignOrders publishes count bodies that are not orders to
// order-placed, through a connector of the test's own, and waits until the
// shipper's settlement has parked each: a copy published on the service's
// connections.
func parkForeignOrders(t *testing.T, amqpURL string, count int) {
	t.Helper()
	transport := rabbitmq.New(rabbitmq.Options.Address(amqpURL))
	defer transport.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declarer, _ := messaging.As[messaging.Declarer](conn)
	parked := func() int {
		state, err := declarer.InspectQueue(ctx, shipQueue+".parked")
		if err != nil {
			t.Fatal(err)
		}
		return state.Messages
	}
	before := parked() // the queue is durable: earlier runs may have left copies

	writer := batch.New(transport)
	defer writer.Close()
	for range count {
		foreign := messaging.Dispatch{Topic: placedTopic, MessageID: "foreign-" + messaging.NewID(), MessageType: placedTopic,
			Mandatory: true, ContentType: "application/json", Payload: []byte("not json")}
		if _, err := writer.Write(ctx, foreign); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "the foreign orders parked", func() (bool, string) {
		n := parked()
		return n >= before+count, fmt.Sprintf("%s.parked holds %d, want %d", shipQueue, n, before+count)
	})
}
