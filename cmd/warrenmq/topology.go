package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/topology"
)

const topologyUsage = `usage:
  warrenmq topology plan  [-replication] [-dead-letters=true] SUBSCRIPTION ...
  warrenmq topology check [-amqp URL] [-timeout 10s] [same flags] SUBSCRIPTION ...

SUBSCRIPTION is QUEUE or QUEUE=BINDING[,BINDING...], where BINDING is EXCHANGE
(a fanout exchange, key "") or EXCHANGE:KIND:KEY (KIND direct, topic, fanout or
headers), as the subscriptions declare them:
  warrenmq topology plan -replication orders.new=orders:topic:order.* billing=payments`

// runTopology prints the plan of a subscription set, or checks it against a
// live broker (exit status 1 when something is missing or differs).
func runTopology(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	set := flag.NewFlagSet("warrenmq topology "+verb, flag.ContinueOnError)
	set.SetOutput(stderr)
	replication := set.Bool("replication", false, "declare the subscriptions' queues quorum (StreamReplication)")
	deadLetters := set.Bool("dead-letters", true, "declare acemq.dlx, {queue}.dlq and {queue}.parked (DeadLetters)")
	address := set.String("amqp", envOr("WARRENMQ_AMQP", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ address (check)")
	timeout := set.Duration("timeout", 10*time.Second, "how long the check may take")
	if err := set.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
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
		fmt.Fprint(stdout, plan)
		return nil
	}

	if _, err := amqp.ParseURI(*address); err != nil { // its text may quote a piece of the password
		return fmt.Errorf("the -amqp address %s is malformed; write it as amqp://user:password@host:5672/vhost", redact.Address(*address))
	}
	transport := rabbitmq.New(rabbitmq.Options.Address(*address), rabbitmq.Options.BrokerTimeout(*timeout))
	defer transport.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		return fmt.Errorf("the transport's connection declares no topology")
	}
	report, err := plan.Check(ctx, declarer)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, report)
	if !report.Healthy() {
		return fmt.Errorf("the broker at %s does not hold the plan: %s", redact.Address(*address), summary(report))
	}
	return nil
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
