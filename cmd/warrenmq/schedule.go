package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

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

func runSchedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(stdout, scheduleUsage)
		return errHelp
	}
	if len(args) == 0 || args[0] != "topology" {
		return fmt.Errorf("%w: schedule needs topology\n%s", errUsage, scheduleUsage)
	}
	set := flag.NewFlagSet("warrenmq schedule topology", flag.ContinueOnError)
	check := set.Bool("check", false, "compare the topology with the broker")
	address := set.String("amqp", envOr("WARRENMQ_AMQP", defaultAddress), "RabbitMQ address (-check)")
	timeout := set.Duration("timeout", 10*time.Second, "how long the check may take")
	asJSON := set.Bool("json", false, "print one JSON document")
	if err := parseFlags(set, args[1:], scheduleUsage, stdout, stderr); err != nil {
		return err
	}
	if set.NArg() != 0 {
		return fmt.Errorf("%w: schedule topology takes no arguments\n%s", errUsage, scheduleUsage)
	}
	plan := schedule.Topology()
	if !*check {
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
		return fmt.Errorf("the broker at %s does not hold the scheduler's topology: %s", redact.Address(*address), summary(report))
	}
	return nil
}
