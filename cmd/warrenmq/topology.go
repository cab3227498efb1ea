package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/topology"
)

const topologyUsage = `usage:
  warrenmq topology plan  [-replication] [-dead-letters=true] [-json] SUBSCRIPTION ...
  warrenmq topology check [-amqp URL] [-timeout 10s] [same flags] SUBSCRIPTION ...

SUBSCRIPTION is QUEUE or QUEUE=BINDING[,BINDING...], where BINDING is EXCHANGE
(a fanout exchange, key "") or EXCHANGE:KIND:KEY (KIND direct, topic, fanout or
headers), as the subscriptions declare them:
  warrenmq topology plan -replication orders.new=orders:topic:order.* billing=payments
plan prints what the subscriptions declare; check compares it with a live
broker. -json prints one JSON document (the plan's exchanges, queues and
bindings; the check's findings).
Exit status: 0 when printed, or when the broker holds the plan; 1 when
something is missing or differs, or the broker could not be asked; 2 on bad
usage.`

// runTopology prints the plan of a subscription set, or checks it against a
// live broker (exit status 1 when something is missing or differs).
func runTopology(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	if isHelp(verb) {
		fmt.Fprintln(stdout, topologyUsage)
		return errHelp
	}
	set := flag.NewFlagSet("warrenmq topology "+verb, flag.ContinueOnError)
	replication := set.Bool("replication", false, "declare the subscriptions' queues quorum (StreamReplication)")
	deadLetters := set.Bool("dead-letters", true, "declare acemq.dlx, {queue}.dlq and {queue}.parked (DeadLetters)")
	address := set.String("amqp", envOr("WARRENMQ_AMQP", defaultAddress), "RabbitMQ address (check)")
	timeout := set.Duration("timeout", 10*time.Second, "how long the check may take")
	asJSON := set.Bool("json", false, "print one JSON document")
	if err := parseFlags(set, args, topologyUsage, stdout, stderr); err != nil {
		return err
	}
	if verb != "plan" && verb != "check" {
		return fmt.Errorf("%w: unknown topology command %q\n%s", errUsage, verb, topologyUsage)
	}
	if set.NArg() == 0 {
		return fmt.Errorf("%w: name at least one subscription\n%s", errUsage, topologyUsage)
	}
	var plan topology.Plan
	for _, spec := range set.Args() {
		config, err := subscription(spec)
		if err != nil {
			return err
		}
		config.Replication, config.DeadLetters = *replication, *deadLetters
		stream, err := topology.ForStream(config)
		if err != nil {
			return err
		}
		plan = plan.Merge(stream)
	}
	if err := plan.Validate(); err != nil {
		return err
	}
	if verb == "plan" {
		return printPlan(stdout, plan, *asJSON)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	declarer, closeAll, err := declarerAt(ctx, *address, *timeout, stderr)
	if err != nil {
		return err
	}
	defer closeAll()
	report, err := plan.Check(ctx, declarer)
	if err != nil {
		return err
	}
	if err := printReport(stdout, report, *asJSON); err != nil {
		return err
	}
	if !report.Healthy() {
		return fmt.Errorf("the broker at %s does not hold the plan: %s", redact.Address(*address), summary(report))
	}
	return nil
}

// planJSON is a topology plan as -json prints it.
type planJSON struct {
	Exchanges []messaging.Exchange `json:"exchanges"`
	Queues    []messaging.Queue    `json:"queues"`
	Bindings  []messaging.Binding  `json:"bindings"`
}

// findingJSON is one finding of a check as -json prints it.
type findingJSON struct {
	State  string `json:"state"`
	What   string `json:"what"`
	Name   string `json:"name"`
	Detail string `json:"detail,omitempty"`
}

// printPlan writes a plan as its declarations, or as JSON.
func printPlan(stdout io.Writer, plan topology.Plan, asJSON bool) error {
	if asJSON {
		return writeJSON(stdout, planJSON{plan.Exchanges, plan.Queues, plan.Bindings})
	}
	_, err := fmt.Fprint(stdout, plan)
	return err
}

// printReport writes a check's findings, or them as JSON with whether the
// broker holds the plan.
func printReport(stdout io.Writer, report topology.Report, asJSON bool) error {
	if !asJSON {
		_, err := fmt.Fprint(stdout, report)
		return err
	}
	findings := make([]findingJSON, 0, len(report))
	for _, f := range report {
		findings = append(findings, findingJSON{State: string(f.State), What: f.What, Name: f.Name, Detail: f.Detail})
	}
	return writeJSON(stdout, map[string]any{"healthy": report.Healthy(), "findings": findings})
}

// subscription reads QUEUE[=BINDING,...] into the config a subscription with
// topology declares.
func subscription(spec string) (messaging.StreamConfig, error) {
	queue, bindings, _ := strings.Cut(spec, "=")
	if queue == "" {
		return messaging.StreamConfig{}, fmt.Errorf("%w: subscription %q names no queue", errUsage, spec)
	}
	config := messaging.StreamConfig{StreamName: queue, EstablishTopology: true}
	if bindings == "" {
		return config, nil
	}
	for _, binding := range strings.Split(bindings, ",") {
		parts := strings.SplitN(binding, ":", 3)
		switch len(parts) {
		case 1:
			config.Topics = append(config.Topics, parts[0])
		case 3:
			config.Bindings = append(config.Bindings, messaging.StreamBinding{Exchange: parts[0], Kind: messaging.ExchangeKind(parts[1]), Key: parts[2]})
		default:
			return messaging.StreamConfig{}, fmt.Errorf("%w: binding %q of %q is neither EXCHANGE nor EXCHANGE:KIND:KEY", errUsage, binding, queue)
		}
	}
	return config, nil
}

// summary counts what is missing and what differs.
func summary(report topology.Report) string {
	counts := map[topology.State]int{}
	for _, f := range report {
		counts[f.State]++
	}
	return fmt.Sprintf("%d missing, %d differ (apply the plan, or change the subscriptions to match what exists)", counts[topology.Missing], counts[topology.Differs])
}
