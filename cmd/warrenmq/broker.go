package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/rabbitmq"
)

// defaultAddress is the local broker the commands reach unless -amqp or
// WARRENMQ_AMQP says otherwise.
const defaultAddress = "amqp://guest:guest@127.0.0.1:5672/"

// transportAt checks address and returns a transport for it, bounded by
// timeout per broker call, that logs its warnings to stderr (the redacting
// writer run gives the commands). The caller closes it.
func transportAt(address string, timeout time.Duration, stderr io.Writer) (messaging.Connector, error) {
	if _, err := amqp.ParseURI(address); err != nil { // its text may quote a piece of the password
		return nil, fmt.Errorf("%w: the -amqp address %s is malformed; write it as amqp://user:password@host:5672/vhost, with reserved characters percent-encoded", errUsage, redact.Address(address))
	}
	return rabbitmq.New(rabbitmq.Options.Address(address), rabbitmq.Options.BrokerTimeout(timeout), rabbitmq.Options.Logger(warnings(stderr))), nil
}

// declarerAt connects to address and returns its Declarer and a function
// that closes what it opened.
func declarerAt(ctx context.Context, address string, timeout time.Duration, stderr io.Writer) (messaging.Declarer, func(), error) {
	transport, err := transportAt(address, timeout, stderr)
	if err != nil {
		return nil, nil, err
	}
	conn, err := transport.Connect(ctx)
	if err != nil {
		_ = transport.Close()
		return nil, nil, fmt.Errorf("cannot reach the broker at %s: %w (check -amqp; `make services` starts the local one)", redact.Address(address), err)
	}
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		_ = conn.Close()
		_ = transport.Close()
		return nil, nil, fmt.Errorf("the transport's connection declares no topology")
	}
	return declarer, func() { _ = conn.Close(); _ = transport.Close() }, nil
}

// warnings logs WARN and above to w.
func warnings(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// writeJSON writes v as indented JSON, one document.
func writeJSON(w io.Writer, v any) error {
	encoder := json.NewEncoder(w)
	encoder.SetIndent("", "  ")
	return encoder.Encode(v)
}
