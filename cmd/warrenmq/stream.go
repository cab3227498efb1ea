package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/patterns/streams"
)

const streamUsage = `usage:
  warrenmq stream tail [-amqp URL] [-from next] [-limit 0] [-for 0] [-width 120] STREAM

Prints the messages of a RabbitMQ stream queue, one line each (offset, id,
type, correlation, attempt, the body's first -width bytes), from -from:
first, last, next, an offset (41337), a time (2026-12-01T10:00:00Z) or how
long ago (90m). Declares nothing and changes nothing. Stops after -limit
messages (0: no limit), after -for (0: until interrupted), or on Ctrl-C.`

func runStream(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "tail" {
		return fmt.Errorf("%w: stream needs tail\n%s", errUsage, streamUsage)
	}
	set := flag.NewFlagSet("warrenmq stream tail", flag.ContinueOnError)
	set.SetOutput(stderr)
	address := set.String("amqp", envOr("WARRENMQ_AMQP", defaultAddress), "RabbitMQ address")
	from := set.String("from", "next", "where to start: first, last, next, an offset, an RFC 3339 time, or a duration ago")
	limit := set.Int("limit", 0, "stop after this many messages (0: no limit)")
	duration := set.Duration("for", 0, "stop after this long (0: until interrupted)")
	width := set.Int("width", 120, "body bytes to show per message")
	set.Usage = func() { fmt.Fprintln(stderr, streamUsage) }
	if err := set.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
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
	err = streams.Tail(ctx, transport, name, offset, func(d messaging.Delivery) bool {
		fmt.Fprintln(stdout, streams.TailLine(d, *width))
		printed++
		return *limit <= 0 || printed < *limit
	})
	if err != nil {
		return fmt.Errorf("tail stream %q at %s: %w", name, redact.Address(*address), err)
	}
	return nil
}
