package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/patterns/schedule"
	"github.com/warrenmq/messaging/retrypolicy"
)

// errAttention marks a command that worked and found something an operator
// must look at: a dead-letter or parking queue that holds messages (exit
// status 3).
var errAttention = errors.New("attention")

const queuesUsage = `usage:
  warrenmq queues [-amqp URL] [-timeout 10s] [-policy exponential:6:10s:5m] [-broker-wait 30s]
                  [-schedule] [-json] QUEUE ...

Lists how many messages wait in each subscription queue, its {queue}.dlq and
{queue}.parked, in the retry rungs its policy needs ({queue}.retry.{d}, with
-policy fixed:N:DELAY or exponential:N:INITIAL:MAX), and with -schedule in the
scheduler's rungs and acemq.schedule.due. A QUEUE may be written as in
topology plan (QUEUE=BINDING,...); only its name is used. A set-aside queue
or rung nobody declared yet is listed as missing; a subscription queue that
does not exist is a name to check.
Exit status: 0 when every dead-letter and parking queue is empty; 3 when one
holds messages; 4 when a QUEUE named does not exist (checked first); 1 when a
queue could not be inspected; 2 on bad usage.`

// queueDepth is one line of the listing.
type queueDepth struct {
	Queue     string `json:"queue"`
	Role      string `json:"role"`
	Messages  int    `json:"messages"`
	Consumers int    `json:"consumers"`
	Missing   bool   `json:"missing,omitempty"`
}

func runQueues(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	set := flag.NewFlagSet("warrenmq queues", flag.ContinueOnError)
	address := set.String("amqp", envOr("WARRENMQ_AMQP", defaultAddress), "RabbitMQ address")
	timeout := set.Duration("timeout", 10*time.Second, "how long the inspection may take")
	policyText := set.String("policy", "", "the subscriptions' retry policy, to list its rungs: fixed:N:DELAY or exponential:N:INITIAL:MAX")
	brokerWait := set.Duration("broker-wait", retrypolicy.DefaultBrokerWaitThreshold, "the policy's broker-wait threshold")
	withSchedule := set.Bool("schedule", false, "also list the scheduler's rungs and acemq.schedule.due")
	asJSON := set.Bool("json", false, "print one JSON document")
	if err := parseFlags(set, args, queuesUsage, stdout, stderr); err != nil {
		return err
	}
	if set.NArg() == 0 && !*withSchedule {
		return fmt.Errorf("%w: name at least one subscription queue (or -schedule)\n%s", errUsage, queuesUsage)
	}
	policy, err := parsePolicy(*policyText)
	if err != nil {
		return err
	}
	wanted, err := wantedQueues(set.Args(), policy.WaitInBrokerFrom(*brokerWait), *withSchedule)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	declarer, closeAll, err := declarerAt(ctx, *address, *timeout, stderr)
	if err != nil {
		return err
	}
	defer closeAll()
	waiting, err := inspectDepths(ctx, declarer, wanted)
	if err != nil {
		return err
	}
	missing := missingSubscriptions(wanted)
	if err := printDepths(stdout, wanted, waiting, missing, *asJSON); err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: no queue %s on the broker at %s; check the name (a subscription's queue, as its StreamConfig names it: `rabbitmqctl list_queues name` lists them)",
			errNotFound, strings.Join(missing, ", "), redact.Address(*address))
	}
	if waiting > 0 {
		return fmt.Errorf("%w: %d message(s) wait in dead-letter or parking queues; look at them with `warrenmq replay -dry-run QUEUE.dlq`", errAttention, waiting)
	}
	return nil
}

// wantedQueues lists, for each subscription queue spec, its dead-letter and
// parking queues and the rungs policy needs; with schedule, the scheduler's
// rungs, its due queue and that queue's dead letters.
func wantedQueues(specs []string, policy retrypolicy.Policy, schedules bool) ([]queueDepth, error) {
	var wanted []queueDepth
	for _, spec := range specs {
		queue, _, _ := strings.Cut(spec, "=")
		if queue == "" {
			return nil, fmt.Errorf("%w: %q names no queue", errUsage, spec)
		}
		wanted = append(wanted, queueDepth{Queue: queue, Role: roleSubscription},
			queueDepth{Queue: wire.DeadLetterQueue(queue), Role: "dead-letter"}, queueDepth{Queue: wire.ParkedQueue(queue), Role: "parked"})
		for _, rung := range policy.Rungs(queue) {
			wanted = append(wanted, queueDepth{Queue: rung.Name, Role: "retry rung " + retrypolicy.DelayName(rung.TTL)})
		}
	}
	if schedules {
		for _, rung := range schedule.Rungs() {
			wanted = append(wanted, queueDepth{Queue: rung.Name, Role: "schedule rung " + retrypolicy.DelayName(rung.TTL)})
		}
		wanted = append(wanted, queueDepth{Queue: schedule.DueQueue, Role: "schedule due"},
			queueDepth{Queue: wire.DeadLetterQueue(schedule.DueQueue), Role: "dead-letter"})
	}
	return wanted, nil
}

// inspectDepths fills in each queue's depth, or that it is missing, and
// returns how many messages wait in the dead-letter and parking queues.
func inspectDepths(ctx context.Context, declarer messaging.Declarer, wanted []queueDepth) (waiting int, err error) {
	for i := range wanted {
		state, err := declarer.InspectQueue(ctx, wanted[i].Queue)
		switch {
		case errors.Is(err, messaging.ErrNotFound):
			wanted[i].Missing = true
		case err != nil:
			return 0, fmt.Errorf("inspect queue %s: %w", wanted[i].Queue, err)
		}
		wanted[i].Messages, wanted[i].Consumers = state.Messages, state.Consumers
		if wanted[i].Role == "dead-letter" || wanted[i].Role == "parked" {
			waiting += state.Messages
		}
	}
	return waiting, nil
}

// roleSubscription is the role of a queue named on the command line.
const roleSubscription = "subscription"

// missingSubscriptions are the subscription queues named that do not exist.
func missingSubscriptions(wanted []queueDepth) []string {
	missing := []string{}
	for _, q := range wanted {
		if q.Role == roleSubscription && q.Missing {
			missing = append(missing, q.Queue)
		}
	}
	return missing
}

// printDepths writes the listing as a table, or as JSON.
func printDepths(stdout io.Writer, wanted []queueDepth, waiting int, missing []string, asJSON bool) error {
	if asJSON {
		return writeJSON(stdout, map[string]any{"queues": wanted, "set_aside": waiting, "not_found": missing})
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "QUEUE\tROLE\tMESSAGES\tCONSUMERS")
	for _, q := range wanted {
		messages := strconv.Itoa(q.Messages)
		if q.Missing {
			messages = "missing"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", q.Queue, q.Role, messages, q.Consumers)
	}
	return w.Flush()
}

// parsePolicy reads fixed:N:DELAY or exponential:N:INITIAL:MAX; empty is
// None (no rungs).
func parsePolicy(text string) (retrypolicy.Policy, error) {
	if text == "" {
		return retrypolicy.None(), nil
	}
	parts := strings.Split(text, ":")
	bad := fmt.Errorf("%w: -policy %q is neither fixed:N:DELAY nor exponential:N:INITIAL:MAX (exponential:6:10s:5m)", errUsage, text)
	if len(parts) < 3 {
		return retrypolicy.Policy{}, bad
	}
	attempts, err := strconv.Atoi(parts[1])
	if err != nil {
		return retrypolicy.Policy{}, bad
	}
	durations := make([]time.Duration, 0, 2)
	for _, p := range parts[2:] {
		d, err := time.ParseDuration(p)
		if err != nil {
			return retrypolicy.Policy{}, bad
		}
		durations = append(durations, d)
	}
	var policy retrypolicy.Policy
	switch {
	case parts[0] == "fixed" && len(durations) == 1:
		policy = retrypolicy.Fixed(attempts, durations[0])
	case parts[0] == "exponential" && len(durations) == 2:
		policy = retrypolicy.Exponential(attempts, durations[0], durations[1])
	default:
		return retrypolicy.Policy{}, bad
	}
	if err := policy.Err(); err != nil {
		return retrypolicy.Policy{}, fmt.Errorf("%w: -policy %q: %v", errUsage, text, err)
	}
	return policy, nil
}
