package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/streams"
)

// The shipment log: every order-shipped event is also appended to a RabbitMQ
// stream (kept a week), and a projection reads it into MariaDB from its own
// checkpoint, saved in the same transaction as what it applies, so a restart
// goes on where it stopped and applies nothing twice.
const (
	shipmentStream = "orders.shipments"
	projectionName = "orders-shipments-projection"
)

var shipmentTables = []string{
	`CREATE TABLE IF NOT EXISTS shipment_log (
		order_id    varchar(36) NOT NULL PRIMARY KEY,
		stream_offset bigint    NOT NULL,
		applied_at  datetime(3) NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS stream_checkpoints (
		name        varchar(128) NOT NULL PRIMARY KEY,
		next_offset bigint       NOT NULL
	)`,
}

// startShipmentLog declares the stream, binds it to the order-shipped
// exchange, and starts the projection from its checkpoint (the stream's first
// message when there is none). stop ends the projection.
func startShipmentLog(ctx context.Context, transport messaging.Connector, db *sql.DB, logger *slog.Logger) (stop func(), err error) {
	for _, ddl := range shipmentTables {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return nil, fmt.Errorf("create the shipment log's tables: %w", err)
		}
	}
	setup, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	conn, err := transport.Connect(setup)
	if err != nil {
		return nil, fmt.Errorf("shipment log: connect: %w", err)
	}
	defer conn.Close()
	if err := streams.Declare(setup, conn, shipmentStream, streams.Retention{MaxAge: 7 * 24 * time.Hour}); err != nil {
		return nil, fmt.Errorf("shipment log: %w", err)
	}
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		return nil, errors.New("shipment log: the transport declares no topology")
	}
	if err := declarer.DeclareExchange(setup, messaging.Exchange{Name: shippedTopic, Kind: messaging.ExchangeFanout, Durable: true}); err != nil {
		return nil, fmt.Errorf("shipment log: %w", err)
	}
	if err := declarer.Bind(setup, messaging.Binding{Queue: shipmentStream, Exchange: shippedTopic}); err != nil {
		return nil, fmt.Errorf("shipment log: %w", err)
	}

	from := streams.FromFirst()
	var next int64
	switch err := db.QueryRowContext(setup, "SELECT next_offset FROM stream_checkpoints WHERE name = ?", projectionName).Scan(&next); {
	case err == nil:
		from = streams.FromOffset(uint64(max(next, 0)))
	case !errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("shipment log: read the checkpoint: %w", err)
	}
	read := func(from streams.Offset) (*streams.Reader, error) {
		return streams.Read(ctx, transport, shipmentStream, shipmentProjection{db: db},
			streams.Options.From(from), streams.Options.Name(projectionName), streams.Options.Prefetch(100), streams.Options.Logger(logger))
	}
	reader, err := read(from)
	var beyond *streams.OffsetBeyondEndError
	if errors.As(err, &beyond) {
		// The checkpoint belongs to an earlier stream of this name (deleted
		// and declared again, or the broker's data reset). The projection is
		// idempotent by order id, so it starts again from the first message
		// and the checkpoint with it, rather than waiting for an offset
		// this stream may never reach.
		logger.Warn("shipment log: the checkpoint lies beyond the stream's end; reading the stream from its first message again",
			"stream", shipmentStream, "checkpoint", beyond.Offset, "stream_next", beyond.Next)
		if _, err := db.ExecContext(setup, "UPDATE stream_checkpoints SET next_offset = 0 WHERE name = ?", projectionName); err != nil {
			return nil, fmt.Errorf("shipment log: reset the checkpoint: %w", err)
		}
		reader, err = read(streams.FromFirst())
	}
	if err != nil {
		return nil, fmt.Errorf("shipment log: read %s: %w", shipmentStream, err)
	}
	return func() { _ = reader.Close() }, nil
}

// shipmentProjection applies each shipped order and the next offset in one
// transaction per message.
type shipmentProjection struct{ db *sql.DB }

func (p shipmentProjection) Handle(ctx context.Context, _ ...any) {
	for _, d := range messaging.DeliveriesFrom(ctx) {
		offset, ok := streams.OffsetOf(d)
		if !ok {
			panic(messaging.Fatalf("shipment log: message %s carries no stream offset", d.MessageID))
		}
		var shipped OrderShipped
		if err := json.Unmarshal(d.Payload, &shipped); err != nil || shipped.OrderID == "" {
			// Not ours to repair: park it, and move the checkpoint past it,
			// so a restart does not park it again.
			if err := messaging.Park(ctx, d, fmt.Errorf("shipment log: not an order-shipped event: %v", err)); err != nil {
				panic(err)
			}
			shipped.OrderID = ""
		}
		if err := p.apply(ctx, shipped.OrderID, offset); err != nil {
			panic(err)
		}
	}
}

// apply records orderID (none: only the checkpoint moves) and the offset after
// it in one transaction.
func (p shipmentProjection) apply(ctx context.Context, orderID string, offset uint64) error {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return messaging.Outage(fmt.Errorf("shipment log: begin: %w", err))
	}
	defer func() { _ = tx.Rollback() }()
	if orderID != "" {
		if _, err := tx.ExecContext(ctx,
			"INSERT IGNORE INTO shipment_log (order_id, stream_offset, applied_at) VALUES (?, ?, ?)",
			orderID, offset, time.Now().UTC()); err != nil {
			return fmt.Errorf("shipment log: apply %s: %w", orderID, err)
		}
	}
	if _, err := tx.ExecContext(ctx,
		"INSERT INTO stream_checkpoints (name, next_offset) VALUES (?, ?) ON DUPLICATE KEY UPDATE next_offset = GREATEST(next_offset, VALUES(next_offset))",
		projectionName, offset+1); err != nil {
		return fmt.Errorf("shipment log: save the checkpoint: %w", err)
	}
	return tx.Commit()
}
