package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/status"
)

// TestStatusFailsWhileMariaDBIsStopped: /status is 503 naming the database
// while MariaDB is down, and the shipping subscription once a message waits on
// it; POST /orders gets a 503 that does not quote the driver; all recover once
// it is back.
func TestStatusFailsWhileMariaDBIsStopped(t *testing.T) {
	amqpURL := testenv.Broker(t)
	testenv.DisruptDatabases(t)
	testenv.OpenMySQL(t) // fails the test with instructions when MariaDB is down
	service := startService(t, amqpURL)
	base := "http://" + service.address
	client := &http.Client{Timeout: 20 * time.Second}

	if reply := get(t, client, base+"/status"); reply.code != http.StatusOK {
		t.Fatalf("/status before the stop: %d %s", reply.code, reply.body)
	}

	t.Cleanup(func() {
		if err := testenv.StartMariaDB(); err != nil {
			t.Errorf("restart MariaDB: %v", err)
		}
	})
	stoppedAt := time.Now()
	if err := testenv.StopMariaDB(); err != nil {
		t.Fatal(err)
	}

	reply := get(t, client, base+"/status")
	reportedIn := time.Since(stoppedAt)
	if reply.code != http.StatusServiceUnavailable {
		t.Fatalf("/status with MariaDB stopped: %d %s, want 503", reply.code, reply.body)
	}
	report := decodeReport(t, reply.body)
	if report.Status != "failing" || check(report, "database").Status != "failing" || check(report, status.BrokerCheck).Status != "ok" {
		t.Errorf("/status with MariaDB stopped should name the database, not the broker: %s", reply.body)
	}
	key := messaging.NewID()
	order := post(t, client, base, `{"item":"book","quantity":1}`, key)
	if order.code != http.StatusServiceUnavailable {
		t.Errorf("POST /orders with MariaDB stopped: %d %s, want 503", order.code, order.body)
	}
	for _, driverText := range []string{"dial tcp", "connection refused", "3306", "invalid connection", "driver"} {
		if strings.Contains(order.body, driverText) {
			t.Errorf("the 503 quotes the database error (%q): %s", driverText, order.body)
		}
	}

	// An order-placed message arriving now finds the database down: the
	// shipping subscription holds it and /status names the subscription.
	published := time.Now()
	publishOrderPlaced(t, amqpURL, messaging.NewID())
	waiting := waitForStatus(t, client, base, 30*time.Second, func(report status.Report) bool {
		return check(report, "subscriptions").Status == "failing"
	})
	if !strings.Contains(check(waiting, "subscriptions").Error, shipQueue) {
		t.Errorf("/status should name the waiting subscription %s: %+v", shipQueue, waiting)
	}
	waitingIn := time.Since(published)

	if err := testenv.StartMariaDB(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	waitForStatus(t, client, base, 60*time.Second, status.Report.Healthy)
	healthyIn := time.Since(restarted)
	if order := post(t, client, base, `{"item":"book","quantity":1}`, key); order.code != http.StatusCreated {
		t.Fatalf("POST /orders after MariaDB came back: %d %s", order.code, order.body)
	}
	t.Logf("/status: 503 naming the database %s after MariaDB stopped, naming %s %s after a message arrived; 200 again %s after MariaDB answered",
		reportedIn.Round(time.Millisecond), shipQueue, waitingIn.Round(time.Millisecond), healthyIn.Round(time.Millisecond))
}

// waitForStatus polls /status (bounded) until its report satisfies done, and
// returns that report; /status must answer 200 exactly when it is healthy.
func waitForStatus(t *testing.T, client *http.Client, base string, bound time.Duration, done func(status.Report) bool) status.Report {
	t.Helper()
	var report status.Report
	eventually(t, bound, "/status to reach the expected state", func() (bool, string) {
		last := get(t, client, base+"/status")
		report = decodeReport(t, last.body)
		if (last.code == http.StatusOK) != report.Healthy() {
			t.Fatalf("/status answered %d for a report %s", last.code, last.body)
		}
		return done(report), fmt.Sprintf("the last answer was %d %s", last.code, last.body)
	})
	return report
}

// publishOrderPlaced publishes an order-placed message straight to the broker,
// as the outbox would, for an order that does not exist (shipping it is a
// no-op once the database answers).
func publishOrderPlaced(t *testing.T, amqpURL, orderID string) {
	t.Helper()
	transport := rabbitmq.New(rabbitmq.Options.Address(amqpURL))
	defer transport.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	connection, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer connection.Close()
	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	payload := fmt.Sprintf(`{"order_id":%q,"item":"book","quantity":1}`, orderID)
	if _, err := writer.Write(ctx, messaging.Dispatch{Topic: placedTopic, MessageType: placedTopic,
		ContentType: "application/json", Payload: []byte(payload)}); err != nil {
		t.Fatal(err)
	}
	if err := writer.Commit(); err != nil {
		t.Fatal(err)
	}
}

func decodeReport(t *testing.T, body string) status.Report {
	t.Helper()
	var report status.Report
	response{body: body}.decode(t, &report)
	return report
}

func check(report status.Report, name string) status.CheckResult {
	for _, result := range report.Checks {
		if result.Name == name {
			return result
		}
	}
	return status.CheckResult{Name: name, Status: "absent"}
}
