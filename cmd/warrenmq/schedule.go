package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/patterns/schedule"
)

const scheduleUsage = `usage:
  warrenmq schedule topology [-check] [-amqp URL] [-timeout 10s] [-json]

Prints the delayed-delivery topology every AceMQ library declares (the
acemq.schedule exchange, its five rungs and acemq.schedule.due); -check
compares it with the broker. Exit status: 0 when printed, or when the broker
holds it; 1 when something is missing or differs, or the broker could not be
asked; 2 on bad usage.`

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

func runSchedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "topology" {
		return fmt.Errorf("%w: schedule needs topology\n%s", errUsage, scheduleUsage)
	}
	set := flag.NewFlagSet("warrenmq schedule topology", flag.ContinueOnError)
	set.SetOutput(stderr)
	check := set.Bool("check", false, "compare the topology with the broker")
	address := set.String("amqp", envOr("WARRENMQ_AMQP", defaultAddress), "RabbitMQ address (-check)")
	timeout := set.Duration("timeout", 10*time.Second, "how long the check may take")
	asJSON := set.Bool("json", false, "print JSON")
	set.Usage = func() { fmt.Fprintln(stderr, scheduleUsage) }
	if err := set.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if set.NArg() != 0 {
		return fmt.Errorf("%w: schedule topology takes no arguments\n%s", errUsage, scheduleUsage)
	}
	plan := schedule.Topology()
	if !*check {
		if *asJSON {
			return writeJSON(stdout, planJSON{plan.Exchanges, plan.Queues, plan.Bindings})
		}
		fmt.Fprint(stdout, plan)
		return nil
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
	if *asJSON {
		findings := make([]findingJSON, 0, len(report))
		for _, f := range report {
			findings = append(findings, findingJSON{State: string(f.State), What: f.What, Name: f.Name, Detail: f.Detail})
		}
		if err := writeJSON(stdout, map[string]any{"healthy": report.Healthy(), "findings": findings}); err != nil {
			return err
		}
	} else {
		fmt.Fprint(stdout, report)
	}
	if !report.Healthy() {
		return fmt.Errorf("the broker at %s does not hold the scheduler's topology: %s", redact.Address(*address), summary(report))
	}
	return nil
}
