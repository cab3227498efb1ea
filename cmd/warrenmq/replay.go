package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/patterns/replay"
)

const replayUsage = `usage:
  warrenmq replay [-amqp URL] [-exchange X] [-key K] [-type T] [-error TEXT] [-header NAME=VALUE]...
                  [-limit N] [-deadline 10m] [-keep-attempts] [-dry-run] [-json] QUEUE

Moves the messages of QUEUE (orders.dlq, orders.parked, ...) back to the
queue they were set aside from (orders), or to -exchange under -key. A
message moves when it matches every filter given: -type (its type, exactly),
-error (its set-aside reason contains TEXT), -header (an application header
equals VALUE). -dry-run lists what would move and moves nothing.
Exit status: 0 when the pass drained, reached -limit or its -deadline;
1 when it failed (what it held went back to QUEUE); 2 on bad usage.`

// headerFilters collects repeated -header NAME=VALUE flags.
type headerFilters map[string]string

func (h headerFilters) String() string { return fmt.Sprint(map[string]string(h)) }

func (h headerFilters) Set(value string) error {
	name, want, ok := strings.Cut(value, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not NAME=VALUE", value)
	}
	h[name] = want
	return nil
}

// replayedMessage is one message a pass read, as -json lists it.
type replayedMessage struct {
	Verdict string `json:"verdict"`
	ID      string `json:"id"`
	Type    string `json:"type"`
	Attempt int    `json:"attempt"`
	Error   string `json:"error"`
}

// replayReport is what -json prints.
type replayReport struct {
	Queue       string            `json:"queue"`
	Destination string            `json:"destination"`
	Moved       int               `json:"moved"`
	Skipped     int               `json:"skipped"`
	Reason      string            `json:"reason"`
	DryRun      bool              `json:"dry_run"`
	Error       string            `json:"error,omitempty"`
	Messages    []replayedMessage `json:"messages,omitempty"`
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	set := flag.NewFlagSet("warrenmq replay", flag.ContinueOnError)
	set.SetOutput(stderr)
	address := set.String("amqp", envOr("WARRENMQ_AMQP", defaultAddress), "RabbitMQ address")
	timeout := set.Duration("timeout", 10*time.Second, "bound of each broker call")
	exchange := set.String("exchange", "", "exchange to publish the copies to (default: the default exchange)")
	key := set.String("key", "", "routing key of the copies (default: the queue QUEUE was set aside from)")
	messageType := set.String("type", "", "move only messages of this type")
	errorText := set.String("error", "", "move only messages whose set-aside reason contains this text")
	headers := headerFilters{}
	set.Var(headers, "header", "move only messages whose application header NAME equals VALUE (repeatable)")
	limit := set.Int("limit", 0, "most messages to move (0: no limit)")
	deadline := set.Duration("deadline", 0, "stop after this long (0: none)")
	keepAttempts := set.Bool("keep-attempts", false, "keep x-acemq-attempt and x-acemq-error as they are")
	dryRun := set.Bool("dry-run", false, "list what would move; move nothing")
	asJSON := set.Bool("json", false, "print a JSON report")
	set.Usage = func() { fmt.Fprintln(stderr, replayUsage) }
	if err := set.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if set.NArg() != 1 {
		return fmt.Errorf("%w: name exactly one queue to replay\n%s", errUsage, replayUsage)
	}
	if *limit < 0 {
		return fmt.Errorf("%w: -limit %d; use 0 for no limit", errUsage, *limit)
	}
	from := replay.From{
		Queue: set.Arg(0), Topic: *exchange, RoutingKey: *key, Limit: *limit,
		KeepAttempts: *keepAttempts, DryRun: *dryRun,
		Filter: filter(*messageType, *errorText, headers),
	}
	if *deadline > 0 {
		from.Deadline = time.Now().Add(*deadline)
	}
	transport, err := transportAt(*address, *timeout, stderr)
	if err != nil {
		return err
	}
	defer transport.Close()

	report := replayReport{Queue: from.Queue, Destination: destinationOf(from), DryRun: from.DryRun}
	list := *dryRun || *asJSON
	each := replay.Options.Each(func(d messaging.Delivery, verdict replay.Verdict) {
		if list {
			report.Messages = append(report.Messages, replayedMessage{Verdict: string(verdict), ID: d.MessageID, Type: d.MessageType, Attempt: d.Attempt, Error: d.Error})
		}
	})
	result, runErr := replay.Run(ctx, transport, from, each)
	report.Moved, report.Skipped, report.Reason = result.Moved, result.Skipped, string(result.Reason)
	if runErr != nil {
		report.Error = runErr.Error()
	}
	if *asJSON {
		if err := writeJSON(stdout, report); err != nil {
			return err
		}
	} else {
		if *dryRun && len(report.Messages) > 0 {
			w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "WOULD\tMESSAGE ID\tTYPE\tATTEMPT\tREASON SET ASIDE")
			for _, m := range report.Messages {
				verdict := "move"
				if m.Verdict == string(replay.Declined) {
					verdict = "skip"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", verdict, cell(m.ID, 40), cell(m.Type, 30), m.Attempt, cell(m.Error, 120))
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "%s: %s to %s\n", from.Queue, result, report.Destination)
	}
	if runErr != nil {
		return fmt.Errorf("replay of %s stopped (%s): %w", from.Queue, result, runErr)
	}
	return nil
}

// filter is the conjunction of the flags given; nil when none is.
func filter(messageType, errorText string, headers headerFilters) func(messaging.Delivery) bool {
	if messageType == "" && errorText == "" && len(headers) == 0 {
		return nil
	}
	return func(d messaging.Delivery) bool {
		if messageType != "" && d.MessageType != messageType {
			return false
		}
		if errorText != "" && !strings.Contains(d.Error, errorText) {
			return false
		}
		for name, want := range headers {
			value, ok := d.Headers[name]
			if !ok {
				return false
			}
			text := wire.Text(value)
			if text == "" {
				text = fmt.Sprint(value)
			}
			if text != want {
				return false
			}
		}
		return true
	}
}

// destinationOf names where from's copies go, for people.
func destinationOf(from replay.From) string {
	key := from.RoutingKey
	if key == "" {
		if source, ok := replay.SourceOf(from.Queue); ok {
			key = source
		} else {
			key = "(each message's own key)"
		}
	}
	if from.Topic == "" {
		return "queue " + key
	}
	return fmt.Sprintf("exchange %s, key %s", from.Topic, key)
}
