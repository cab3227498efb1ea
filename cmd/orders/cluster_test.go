package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
)

// TestOrdersShipThroughARollingRestart runs the example service on the test
// cluster (every node's address, quorum queues) and restarts the three nodes
// one at a time (stop_app, start_app) while orders are placed: every order the
// service accepted ships. 2,000 orders under WARRENMQ_FAULTS_FULL=1 (make
// faults); it runs only there, since a rolling restart takes minutes.
func TestOrdersShipThroughARollingRestart(t *testing.T) {
	if os.Getenv("WARRENMQ_FAULTS_FULL") != "1" {
		t.Skip("a rolling restart of the test cluster runs in make faults (WARRENMQ_FAULTS_FULL=1)")
	}
	addresses := testenv.Cluster(t)
	db := testenv.MySQL(t)
	client := &http.Client{Timeout: 10 * time.Second}
	service := startServiceWith(t, settings{amqp: strings.Join(addresses, " "), dsn: testenv.MySQLDSN, quorum: true}, io.Discard)
	defer service.stop(t)
	base := "http://" + service.address

	const n = 2000
	placed := make(chan []string, 1)
	failed := make(chan error, 1)
	go func() { // orders go to MariaDB and the outbox: the broker's restarts do not refuse them
		var ids []string
		for i := range n {
			response, err := client.Post(base+"/orders", "application/json", strings.NewReader(fmt.Sprintf(`{"item":"rolling-%d","quantity":1}`, i)))
			if err != nil {
				failed <- err
				return
			}
			var view orderView
			_ = json.NewDecoder(response.Body).Decode(&view)
			_ = response.Body.Close()
			if response.StatusCode != http.StatusCreated || view.ID == "" {
				failed <- fmt.Errorf("POST /orders answered %d %+v", response.StatusCode, view)
				return
			}
			ids = append(ids, view.ID)
		}
		placed <- ids
	}()

	restarted := time.Now()
	for _, node := range testenv.ClusterNodes {
		time.Sleep(2 * time.Second) // real time: orders flow for a while before each restart
		testenv.Rabbitmqctl(t, "-n", node, "stop_app")
		time.Sleep(3 * time.Second) // and the node stays down for a while, as in a real rolling restart
		testenv.Rabbitmqctl(t, "-n", node, "start_app")
		testenv.Rabbitmqctl(t, "-n", node, "await_startup")
	}
	t.Logf("rolled three nodes in %s", time.Since(restarted).Round(time.Second))

	var ids []string
	select {
	case ids = <-placed:
	case err := <-failed:
		t.Fatalf("placing orders during the rolling restart: %v", err)
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	query := "SELECT COUNT(*) FROM orders WHERE status = 'shipped' AND id IN (?" + strings.Repeat(",?", len(ids)-1) + ")"
	var shipped int
	eventually(t, 3*time.Minute, "every accepted order shipped after the rolling restart", func() (bool, string) {
		if err := db.QueryRowContext(context.Background(), query, args...).Scan(&shipped); err != nil {
			t.Fatal(err)
		}
		return shipped == len(ids), fmt.Sprintf("%d of %d shipped", shipped, len(ids))
	})
	fmt.Printf("fault orders-rolling-restart accepted %d shipped %d\n", len(ids), shipped)
}
