package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
)

// TestAStaleCheckpointIsResetWhenTheStreamWasDeclaredAgain deletes the
// shipment stream between two runs of the service, as an operator or a broker
// reset would, keeping the projection's checkpoint: the restarted service
// finds the checkpoint beyond the new stream's end, says so, and projects the
// orders placed next, instead of waiting for an offset the stream has not
// reached. (The failing CI run of 2026-12-01 was this, silently.)
func TestAStaleCheckpointIsResetWhenTheStreamWasDeclaredAgain(t *testing.T) {
	amqpURL := testenv.Broker(t)
	db := testenv.MySQL(t)
	client := &http.Client{Timeout: 10 * time.Second}

	first := startService(t, amqpURL)
	waitProjected(t, db, placeOrders(t, client, "http://"+first.address, 2))
	first.stop(t)
	if _, err := db.Exec("UPDATE stream_checkpoints SET next_offset = GREATEST(next_offset, 1000000) WHERE name = ?", projectionName); err != nil {
		t.Fatal(err)
	}
	if err := testenv.DeleteTopology(amqpURL, nil, shipmentStream); err != nil {
		t.Fatal(err)
	}

	var logs testenv.LogBuffer
	second := startServiceWith(t, settings{amqp: amqpURL, dsn: testenv.MySQLDSN}, &logs)
	defer second.stop(t)
	waitProjected(t, db, placeOrders(t, client, "http://"+second.address, 3))
	if !strings.Contains(logs.String(), "the checkpoint lies beyond the stream's end") {
		t.Fatalf("the service did not say why it read the shipment stream from its first message again; its log:\n%s", logs.String())
	}
	var next int64
	if err := db.QueryRow("SELECT next_offset FROM stream_checkpoints WHERE name = ?", projectionName).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if next > 100 {
		t.Fatalf("the checkpoint is %d after the reset, want the new stream's few offsets", next)
	}
}
