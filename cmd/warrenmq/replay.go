package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/patterns/replay"
)

const replayUsage = `usage:
  warrenmq replay [-amqp URL] [-exchange X] [-key K] [-type T] [-error TEXT] [-header NAME=VALUE]...
                  [-limit N] [-deadline 10m] [-keep-attempts] [-dry-run] [-each] [-json]
                  [-progress auto|bar|lines|none] QUEUE

Moves the messages of QUEUE (orders.dlq, orders.parked, ...) back to the
queue they were set aside from (orders), or to -exchange under -key. A
message moves when it matches every filter given: -type (its type, exactly),
-error (its set-aside reason contains TEXT), -header (an application header
equals VALUE). -dry-run reads and filters, moves nothing, and summarises what
would move: counts by set-aside reason with the first ids of each; -each (or
-v) lists every message instead. While it runs, stderr shows its progress (a
bar on a terminal, a line every 2s otherwise); it ends with the totals: moved,
skipped, failed (read, not moved, back in QUEUE), left in QUEUE, and why it
stopped. -json prints one JSON document instead (doc/operations.md).
Exit status: 0 when the pass drained, reached -limit or its -deadline;
1 when it failed (what it held went back to QUEUE); 2 on bad usage; 4 when
QUEUE (or the -exchange) does not exist.`

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

// replayedMessage is one message a pass read, as -each -json lists it.
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
	DryRun      bool              `json:"dry_run"`
	Depth       int               `json:"depth"`
	Moved       int               `json:"moved"`
	Skipped     int               `json:"skipped"`
	Failed      int               `json:"failed"`
	Left        int               `json:"left"`
	Reason      string            `json:"reason"`
	Error       string            `json:"error,omitempty"`
	Seconds     float64           `json:"seconds"`
	Reasons     []*reasonGroup    `json:"reasons"`
	Messages    []replayedMessage `json:"messages,omitempty"`
}

// replayFlags are warrenmq replay's flags beyond what replay.From holds.
type replayFlags struct {
	address, progress string
	timeout           time.Duration
	asJSON, each      bool
}

func parseReplayFlags(args []string, stdout, stderr io.Writer) (replayFlags, replay.From, error) {
	var f replayFlags
	set := flag.NewFlagSet("warrenmq replay", flag.ContinueOnError)
	set.StringVar(&f.address, "amqp", envOr("WARRENMQ_AMQP", defaultAddress), "RabbitMQ address")
	set.DurationVar(&f.timeout, "timeout", 10*time.Second, "bound of each broker call")
	exchange := set.String("exchange", "", "exchange to publish the copies to (default: the default exchange)")
	key := set.String("key", "", "routing key of the copies (default: the queue QUEUE was set aside from)")
	messageType := set.String("type", "", "move only messages of this type")
	errorText := set.String("error", "", "move only messages whose set-aside reason contains this text")
	headers := headerFilters{}
	set.Var(headers, "header", "move only messages whose application header NAME equals VALUE (repeatable)")
	limit := set.Int("limit", 0, "most messages to move (0: no limit)")
	deadline := set.Duration("deadline", 0, "stop after this long (0: none)")
	keepAttempts := set.Bool("keep-attempts", false, "keep x-acemq-attempt and x-acemq-error as they are")
	dryRun := set.Bool("dry-run", false, "summarise what would move; move nothing")
	set.BoolVar(&f.each, "each", false, "list every message read, not a summary by reason")
	set.BoolVar(&f.each, "v", false, "the same as -each")
	set.BoolVar(&f.asJSON, "json", false, "print one JSON document")
	set.StringVar(&f.progress, "progress", progressAuto, "progress on stderr: auto (a bar on a terminal, lines otherwise), bar, lines or none")
	if err := parseFlags(set, args, replayUsage, stdout, stderr); err != nil {
		return f, replay.From{}, err
	}
	if set.NArg() != 1 {
		return f, replay.From{}, fmt.Errorf("%w: name exactly one queue to replay\n%s", errUsage, replayUsage)
	}
	if *limit < 0 {
		return f, replay.From{}, fmt.Errorf("%w: -limit %d; use 0 for no limit", errUsage, *limit)
	}
	if err := checkProgressMode(f.progress); err != nil {
		return f, replay.From{}, err
	}
	from := replay.From{
		Queue: set.Arg(0), Topic: *exchange, RoutingKey: *key, Limit: *limit,
		KeepAttempts: *keepAttempts, DryRun: *dryRun,
		Filter: filter(*messageType, *errorText, headers),
	}
	if *deadline > 0 {
		from.Deadline = time.Now().Add(*deadline)
	}
	return f, from, nil
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, from, err := parseReplayFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	transport, err := transportAt(f.address, f.timeout, stderr)
	if err != nil {
		return err
	}
	defer transport.Close()
	inspect, cancel := context.WithTimeout(ctx, f.timeout)
	declarer, closeDeclarer, err := declarerAt(inspect, f.address, f.timeout, stderr)
	cancel()
	if err != nil {
		return err
	}
	defer closeDeclarer()
	depth, err := existingDepth(ctx, declarer, from.Queue, f)
	if err != nil {
		return err
	}

	report := replayReport{Queue: from.Queue, Destination: destinationOf(from), DryRun: from.DryRun, Depth: depth}
	tally := newTally(f.each)
	verb := "moved"
	if from.DryRun {
		verb = "would move"
	}
	bar := startProgress(stderr, f.progress, "replay "+from.Queue, "messages", verb, depth)
	defer bar.stop() // also on a panic; stop may be called again
	read := 0
	from.Filter = counting(from.Filter, &read)
	each := replay.Options.Each(func(d messaging.Delivery, verdict replay.Verdict) {
		if verdict == replay.Declined {
			bar.skipped.Add(1)
		} else {
			bar.done.Add(1)
		}
		tally.add(d, verdict)
	})
	result, runErr := replay.Run(ctx, transport, from, each)
	bar.stop()

	report.Moved, report.Skipped, report.Reason = result.Moved, result.Skipped, string(result.Reason)
	report.Failed = max(read-result.Moved-result.Skipped, 0)
	report.Seconds = bar.elapsed().Seconds()
	report.Reasons, report.Messages = tally.sorted(), tally.messages
	report.Left = leftIn(ctx, declarer, from.Queue, f, stderr)
	if runErr != nil {
		report.Error = runErr.Error()
	}
	if err := printReplay(stdout, f, report, result); err != nil {
		return err
	}
	return replayError(from.Queue, f.address, result, runErr)
}

// existingDepth is how many messages wait in queue, or errNotFound when
// there is no such queue.
func existingDepth(ctx context.Context, declarer messaging.Declarer, queue string, f replayFlags) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	state, err := declarer.InspectQueue(ctx, queue)
	switch {
	case errors.Is(err, messaging.ErrNotFound):
		return 0, fmt.Errorf("%w: queue %s does not exist on the broker at %s; check the name (`warrenmq queues SUBSCRIPTION` lists a subscription's dead-letter and parking queues)",
			errNotFound, queue, redact.Address(f.address))
	case err != nil:
		return 0, fmt.Errorf("inspect queue %s: %w", queue, err)
	}
	return state.Messages, nil
}

// leftIn is how many messages wait in queue once the pass ended (-1 when
// the broker could not say), asked even when the pass was interrupted, and
// on a new connection when the pass's failure closed the first one.
func leftIn(ctx context.Context, declarer messaging.Declarer, queue string, f replayFlags, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.timeout)
	defer cancel()
	state, err := declarer.InspectQueue(ctx, queue)
	if err != nil {
		again, closeAgain, dialErr := declarerAt(ctx, f.address, f.timeout, stderr)
		if dialErr != nil {
			return -1
		}
		defer closeAgain()
		if state, err = again.InspectQueue(ctx, queue); err != nil {
			return -1
		}
	}
	return state.Messages
}

// counting is filter (nil: every message) counting every message read.
func counting(filter func(messaging.Delivery) bool, read *int) func(messaging.Delivery) bool {
	return func(d messaging.Delivery) bool {
		*read++
		return filter == nil || filter(d)
	}
}

// replayError is the error a pass that did not end well returns: a pass
// that named something missing is errNotFound (exit status 4).
func replayError(queue, address string, result replay.Result, runErr error) error {
	switch {
	case runErr == nil:
		return nil
	case result.Reason == replay.Cancelled:
		return fmt.Errorf("replay of %s interrupted (%s): %w; what did not move is still in %s: run it again to continue", queue, result, runErr, queue)
	case errors.Is(runErr, messaging.ErrNotFound):
		return fmt.Errorf("%w: replay of %s stopped (%s): the broker at %s lacks what the pass names (the queue, or the -exchange): %w; check the names",
			errNotFound, queue, result, redact.Address(address), runErr)
	}
	return fmt.Errorf("replay of %s stopped (%s): %w; what did not move is still in %s: fix the cause and run it again", queue, result, runErr, queue)
}

// printReplay writes the report: one JSON document, or the summary by
// reason (every message with -each) and the totals.
func printReplay(stdout io.Writer, f replayFlags, report replayReport, result replay.Result) error {
	if f.asJSON {
		return writeJSON(stdout, report)
	}
	var err error
	if f.each {
		err = printEach(stdout, report)
	} else {
		err = printReasons(stdout, report)
	}
	if err != nil {
		return err
	}
	left := fmt.Sprint(report.Left)
	if report.Left < 0 {
		left = "unknown"
	}
	rate := 0.0
	if report.Seconds > 0 {
		rate = float64(report.Moved+report.Skipped) / report.Seconds
	}
	_, err = fmt.Fprintf(stdout, "%s: %s to %s; %d failed, %s left in %s; %s, %.0f/s\n", report.Queue, result, report.Destination,
		report.Failed, left, report.Queue, (time.Duration(report.Seconds * float64(time.Second))).Round(time.Millisecond), rate)
	return err
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
