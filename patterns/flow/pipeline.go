package flow

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/streaming"
	"github.com/warrenmq/messaging/topology"
)

// ErrInvalidPipeline matches every error NewPipeline returns for a pipeline
// that cannot be built as described (no connection, no name, no steps, a bad
// or repeated step name, step types that do not fit); the text says which.
var ErrInvalidPipeline = errors.New("acemq: the pipeline is invalid")

// invalid is a build error whose text is the wire contract's, matching
// ErrInvalidPipeline.
type invalid struct {
	text  string
	cause error
}

func (e invalid) Error() string        { return e.text }
func (e invalid) Is(target error) bool { return target == ErrInvalidPipeline }
func (e invalid) Unwrap() error        { return e.cause }

func invalidf(format string, args ...any) error {
	return invalid{text: fmt.Sprintf(format, args...)}
}

// PipelinePart is what NewPipeline takes after the name: its steps (Step)
// and its Options, in any order.
type PipelinePart interface{ pipelinePart() }

// PipelineStep is one typed step of a pipeline; build it with Step.
type PipelineStep struct {
	name    string
	in, out reflect.Type
	config  stepConfig
	handler func(c config, writer messaging.Writer, position int) messaging.Handler
}

func (PipelineStep) pipelinePart() {}

// Step is a step of a pipeline: run reads the message the step's queue
// receives as In and returns the Out the next step consumes, true to go on
// and false to end the run early (the input is accepted). The name is also
// the step's routing key and queue suffix: letters, digits, dots and dashes.
func Step[In, Out any](name string, run func(ctx context.Context, delivery messaging.Delivery, in In) (Out, bool, error), options ...StepOption) PipelineStep {
	return PipelineStep{
		name:   name,
		in:     reflect.TypeFor[In](),
		out:    reflect.TypeFor[Out](),
		config: newStepConfig(options),
		handler: func(c config, writer messaging.Writer, position int) messaging.Handler {
			return &handler[In, Out]{config: c, writer: writer, fn: run, mode: modePipeline, position: position}
		},
	}
}

// Pipeline is a declared chain of steps that messages of type T enter
// through Send: Java's topology to the letter, a durable direct exchange
// named after the pipeline and a durable (quorum) {pipeline}.{step} queue per
// step bound on the step's name, each consumed by the step's subscriptions.
type Pipeline[T any] struct {
	name     string
	steps    []PipelineStep
	route    Route
	plan     topology.Plan
	config   config
	senders  chan *batch.Writer
	hops     []*batch.Writer
	consumer *streaming.Consumer
	closing  chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// NewPipeline validates the pipeline, declares its topology through the
// transport's messaging.Declarer, starts a consumer for every step and
// returns once each has opened its stream. A step type that does not fit
// the next is refused here, with the wire contract's text, before anything
// is declared; any start failure closes what was started. ctx bounds the
// start only.
func NewPipeline[T any](ctx context.Context, transport messaging.Connector, name string, parts ...PipelinePart) (*Pipeline[T], error) {
	var options []Option
	p := &Pipeline[T]{name: name, closing: make(chan struct{})}
	for _, part := range parts {
		switch part := part.(type) {
		case PipelineStep:
			p.steps = append(p.steps, part)
		case Option:
			options = append(options, part)
		}
	}
	if err := p.validate(transport); err != nil {
		return nil, err
	}
	names := make([]string, len(p.steps))
	for i, step := range p.steps {
		names[i] = step.name
	}
	p.route = NewRoute(name, names...)
	p.config = newConfig(options)
	p.config.pipeline, p.config.route = name, p.route
	plan, err := p.topology()
	if err != nil {
		return nil, err
	}
	p.plan = plan

	if err := p.declare(ctx, transport); err != nil {
		return nil, err
	}
	p.senders = make(chan *batch.Writer, sendWriters)
	for range sendWriters {
		p.senders <- batch.New(transport)
	}
	var subscriptions []*streaming.Subscription
	for position, step := range p.steps {
		c := p.config
		c.step = step.name
		for range step.config.consumers {
			hops := batch.New(transport)
			p.hops = append(p.hops, hops)
			worker := retry.New(step.handler(c, hops, position),
				retry.Options.Policy(step.config.policy), retry.Options.Logger(c.logger))
			options := append(append([]streaming.SubscriptionOption(nil), step.config.subscriptions...),
				streaming.SubscriptionOptions.Name(name+"."+step.name),
				streaming.SubscriptionOptions.AddWorkers(worker),
				streaming.SubscriptionOptions.FullDeliveryToHandler(true),
				streaming.SubscriptionOptions.EstablishTopology(true),
				streaming.SubscriptionOptions.StreamReplication(true),
				streaming.SubscriptionOptions.DeadLetters(true),
				streaming.SubscriptionOptions.RetryPolicy(step.config.policy),
			)
			subscriptions = append(subscriptions, streaming.NewSubscription(p.route.QueueFor(step.name), options...))
		}
	}
	p.consumer = streaming.New(transport,
		streaming.Options.Subscriptions(subscriptions...),
		streaming.Options.Logger(p.config.logger))
	if err := p.consumer.Start(ctx); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("acemq: pipeline %q could not start its steps: %w", name, err)
	}
	return p, nil
}

// validate checks the pipeline as the wire contract words it.
func (p *Pipeline[T]) validate(transport messaging.Connector) error {
	if transport == nil {
		return invalidf("acemq: a pipeline needs a connection")
	}
	if p.name == "" {
		return invalidf("acemq: a pipeline needs a name, which is also its exchange")
	}
	if len(p.steps) == 0 {
		return invalidf("acemq: pipeline %q has no steps", p.name)
	}
	seen := map[string]bool{}
	for _, step := range p.steps {
		if !stepName.MatchString(step.name) {
			return invalidf("acemq: pipeline %q has a step named %q, which cannot be a routing key: letters, digits, dots and dashes only", p.name, step.name)
		}
		if seen[step.name] {
			return invalidf("acemq: pipeline %q declares the step %q twice, and two steps by one name are one queue with two handlers", p.name, step.name)
		}
		seen[step.name] = true
		if err := step.config.policy.Err(); err != nil {
			return invalid{text: fmt.Sprintf("acemq: pipeline %q step %q has a retry policy with invalid inputs: %v", p.name, step.name, err), cause: err}
		}
	}
	if sent := reflect.TypeFor[T](); !sent.AssignableTo(p.steps[0].in) {
		return invalidf("acemq: pipeline %q is sent %s but its first step %q consumes %s", p.name, sent, p.steps[0].name, p.steps[0].in)
	}
	for i := 1; i < len(p.steps); i++ {
		before, step := p.steps[i-1], p.steps[i]
		if !before.out.AssignableTo(step.in) {
			return invalidf("acemq: pipeline %q step %q produces %s but the next step %q consumes %s", p.name, before.name, before.out, step.name, step.in)
		}
	}
	return nil
}

// topology is the pipeline's plan: the exchange, and for each step its
// queue as a stream with dead letters declares it, bound on the step name.
func (p *Pipeline[T]) topology() (topology.Plan, error) {
	plan := topology.Plan{Exchanges: []messaging.Exchange{{Name: p.name, Kind: messaging.ExchangeDirect, Durable: true}}}
	for _, step := range p.steps {
		stepPlan, err := topology.ForStream(messaging.StreamConfig{
			StreamName:        p.route.QueueFor(step.name),
			EstablishTopology: true,
			Replication:       true,
			DeadLetters:       true,
			Bindings:          []messaging.StreamBinding{{Exchange: p.name, Kind: messaging.ExchangeDirect, Key: step.name}},
		})
		if err != nil {
			return topology.Plan{}, fmt.Errorf("acemq: pipeline %q cannot plan the queue of step %q: %w", p.name, step.name, err)
		}
		plan = plan.Merge(stepPlan)
	}
	return plan, nil
}

// declare applies the plan through a connection of its own.
func (p *Pipeline[T]) declare(ctx context.Context, transport messaging.Connector) error {
	connection, err := transport.Connect(ctx)
	if err != nil {
		return fmt.Errorf("acemq: pipeline %q could not connect to declare its topology: %w", p.name, err)
	}
	defer connection.Close()
	declarer, ok := messaging.As[messaging.Declarer](connection)
	if !ok {
		return fmt.Errorf("acemq: pipeline %q cannot declare its topology: the transport's connection (%T) offers no messaging.Declarer", p.name, connection)
	}
	if err := p.plan.Apply(ctx, declarer); err != nil {
		return fmt.Errorf("acemq: pipeline %q could not declare its topology: %w", p.name, err)
	}
	return nil
}

// Name is the pipeline's name, which is also its exchange.
func (p *Pipeline[T]) Name() string { return p.name }

// Route is the pipeline's declared route, for a FollowSlip step of another
// service that takes part in it (Options.AlongRoute).
func (p *Pipeline[T]) Route() Route { return NewRoute(p.route.Name, p.route.Steps...) }

// Topology is the plan the pipeline declared, to print or to check against
// a broker (topology.Plan.Check).
func (p *Pipeline[T]) Topology() topology.Plan { return p.plan.Merge() }

// Describe returns the pipeline in one line, each step's description in
// brackets: "pipeline fulfilment with 3 steps: validate | reserve (holds
// stock) | dispatch". It is returned, never logged.
func (p *Pipeline[T]) Describe() string {
	steps := make([]string, len(p.steps))
	for i, step := range p.steps {
		steps[i] = step.name
		if step.config.description != "" {
			steps[i] += " (" + step.config.description + ")"
		}
	}
	return fmt.Sprintf("pipeline %s with %d steps: %s", p.name, len(p.steps), strings.Join(steps, " | "))
}

// sendWriters is how many connections Send publishes through at once: a
// confirm from a quorum queue waits for the disk, so concurrent callers
// each need a writer of their own to overlap their waits.
const sendWriters = 8

// Send starts a run: message goes to the first step, mandatory and
// confirmed, carrying the route headers at position 0 and a fresh run id,
// which Send returns. It is safe for concurrent use. Calling it after Close
// is an error.
func (p *Pipeline[T]) Send(ctx context.Context, message T) (runID string, err error) {
	return p.SendWith(ctx, message, messaging.Dispatch{})
}

// SendWith is Send with envelope fields of your own (MessageID,
// CorrelationID, Headers, ...); its address, route and payload are the
// pipeline's.
func (p *Pipeline[T]) SendWith(ctx context.Context, message T, envelope messaging.Dispatch) (runID string, err error) {
	payload, err := p.config.serializer.Serialize(message)
	if err != nil {
		return "", fmt.Errorf("acemq: pipeline %s cannot encode the message it is sent: %w", p.name, err)
	}
	envelope.Payload, envelope.Message = payload, nil
	envelope.ContentType = p.config.serializer.ContentType()
	envelope.Mandatory = true
	slip := p.route.Start()
	if err := slip.Apply(&envelope); err != nil {
		return "", err
	}
	var sender *batch.Writer
	select {
	case sender = <-p.senders:
	case <-p.closing:
		return "", fmt.Errorf("acemq: pipeline %s is closed: %w", p.name, messaging.ErrClosed)
	case <-ctx.Done():
		return "", fmt.Errorf("acemq: pipeline %s could not start a run: %w", p.name, ctx.Err())
	}
	_, err = sender.Write(ctx, envelope)
	p.senders <- sender
	if err != nil {
		return "", fmt.Errorf("acemq: pipeline %s could not start a run: %w", p.name, err)
	}
	return slip.RunID(), nil
}

// Close stops every step's consumer (each finishes according to its
// subscription's shutdown strategy) and closes the writers. It is bounded
// by the consumer's own shutdown bounds; a second call returns the first's
// result.
func (p *Pipeline[T]) Close() error {
	p.closeOnce.Do(func() {
		close(p.closing)
		var errs []error
		if p.consumer != nil {
			errs = append(errs, p.consumer.Close())
		}
		for _, w := range p.hops {
			errs = append(errs, w.Close())
		}
		for range cap(p.senders) {
			errs = append(errs, (<-p.senders).Close())
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}
