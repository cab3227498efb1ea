package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/patterns/streams"
)

const streamUsage = `usage:
  warrenmq stream tail [-amqp URL] [-from next] [-limit 0] [-for 0] [-width 120] [-json] STREAM

Prints the messages of a RabbitMQ stream queue, one line each (offset, id,
type, correlation, attempt, the body's first -width bytes), from -from:
first, last, next, an offset (41337), a time (2026-12-01T10:00:00Z) or how
long ago (90m). Declares nothing and changes nothing. Stops after -limit
messages (0: no limit), after -for (0: until interrupted), or on Ctrl-C.
-json prints one JSON document when it stops, with every message whole.
Exit status: 0 when it stopped as asked; 1 when the stream failed; 2 on bad
usage; 4 when STREAM does not exist.`

// tailedMessage is one message of a tail as -json prints it.
type tailedMessage struct {
	Offset        *uint64 `json:"offset"`
	ID            string  `json:"id"`
	Type          string  `json:"type"`
	CorrelationID string  `json:"correlation_id"`
	Attempt       int     `json:"attempt"`
	ContentType   string  `json:"content_type"`
	Size          int     `json:"size"`
	Body          *string `json:"body"`
	BodyBase64    []byte  `json:"body_base64,omitempty"`
}

// tailed is the -json form of d: its body as text when it is UTF-8,
// base64 otherwise.
func tailed(d messaging.Delivery) tailedMessage {
	m := tailedMessage{ID: d.MessageID, Type: d.MessageType, CorrelationID: d.CorrelationID, Attempt: d.Attempt, ContentType: d.ContentType, Size: len(d.Payload)}
	if offset, ok := streams.OffsetOf(d); ok {
		m.Offset = &offset
	}
	if utf8.Valid(d.Payload) {
		body := string(d.Payload)
		m.Body = &body
	} else {
		m.BodyBase64 = d.Payload
	}
	return m
}

func runStream(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(stdout, streamUsage)
		return errHelp
	}
	if len(args) == 0 || args[0] != "tail" {
		return fmt.Errorf("%w: stream needs tail\n%s", errUsage, streamUsage)
	}
	set := flag.NewFlagSet("warrenmq stream tail", flag.ContinueOnError)
	address := set.String("amqp", envOr("WARRENMQ_AMQP", defaultAddress), "RabbitMQ address")
	from := set.String("from", "next", "where to start: first, last, next, an offset, an RFC 3339 time, or a duration ago")
	limit := set.Int("limit", 0, "stop after this many messages (0: no limit)")
	duration := set.Duration("for", 0, "stop after this long (0: until interrupted)")
	width := set.Int("width", 120, "body bytes to show per message")
	asJSON := set.Bool("json", false, "print one JSON document when it stops")
	if err := parseFlags(set, args[1:], streamUsage, stdout, stderr); err != nil {
		return err
	}
	if set.NArg() != 1 {
		return fmt.Errorf("%w: stream tail takes one stream name\n%s", errUsage, streamUsage)
	}
	offset, err := streams.ParseOffset(*from, time.Now())
	if err != nil {
		return fmt.Errorf("%w: -from: %v", errUsage, err)
	}
	transport, err := transportAt(*address, 10*time.Second, stderr)
	if err != nil {
		return err
	}
	defer transport.Close()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	name, printed := set.Arg(0), 0
	messages := []tailedMessage{}
	err = streams.Tail(ctx, transport, name, offset, func(d messaging.Delivery) bool {
		if *asJSON {
			messages = append(messages, tailed(d))
		} else {
			fmt.Fprintln(stdout, streams.TailLine(d, *width))
		}
		printed++
		return *limit <= 0 || printed < *limit
	})
	switch {
	case errors.Is(err, messaging.ErrNotFound):
		return fmt.Errorf("%w: no stream %q on the broker at %s; check the name (streams are declared by their producers: `rabbitmqctl list_queues name type` lists them): %w",
			errNotFound, name, redact.Address(*address), err)
	case err != nil:
		return fmt.Errorf("tail stream %q at %s: %w", name, redact.Address(*address), err)
	}
	if *asJSON {
		return writeJSON(stdout, map[string]any{"stream": name, "from": *from, "messages": messages})
	}
	return nil
}
