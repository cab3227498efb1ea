package flow

import (
	"log/slog"

	"github.com/warrenmq/messaging/internal/options"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// Options is the entry point for configuring Then, FollowSlip and
// NewPipeline: flow.Options.Monitor(...).
var Options OptionSet

// OptionSet holds the options of Then, FollowSlip and NewPipeline; each
// method returns an Option. It is exported so that go doc lists them.
type OptionSet struct{}

// Option configures Then, FollowSlip or NewPipeline. An Option is also a
// PipelinePart: it can be listed among a pipeline's steps.
type Option func(*config)

func (Option) pipelinePart() {}

type config struct {
	pipeline     string
	step         string
	route        Route
	messageType  string
	serializer   serialization.Serializer
	deserializer serialization.Deserializer
	monitor      Monitor
	observer     RunObserver
	logger       *slog.Logger
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	if c.pipeline == "" && c.route.Name != "" {
		c.pipeline = c.route.Name
	}
	options.Default[serialization.Serializer](&c.serializer, serialization.JSON{})
	options.Default[serialization.Deserializer](&c.deserializer, serialization.JSON{})
	options.Default[Monitor](&c.monitor, NopMonitor{})
	options.Default(&c.logger, slog.Default())
	return c
}

// InPipeline names the pipeline a Then or FollowSlip step belongs to, for
// run reports: a run that finishes at a step is reported (Monitor.RunFinished
// and the context's RunObserver) only when its pipeline is named. Default:
// none (NewPipeline names its steps' pipeline itself).
func (OptionSet) InPipeline(name string) Option { return func(c *config) { c.pipeline = name } }

// AtStep names the step, for run reports and the Monitor. Default: none;
// FollowSlip uses the name of the stop it is doing.
func (OptionSet) AtStep(step string) Option { return func(c *config) { c.step = step } }

// AlongRoute gives FollowSlip the declared route its messages travel: a
// message that carries its slip as route headers (x-acemq-route, Java's
// form) is forwarded to the route's exchange under the next step's name. It
// also names the pipeline (InPipeline) unless that is set. Default: none, and
// a declared route then cannot be followed.
func (OptionSet) AlongRoute(route Route) Option { return func(c *config) { c.route = route } }

// MessageType is the type Then writes on the next message (default: none,
// which the wire contract reads as the routing key).
func (OptionSet) MessageType(messageType string) Option {
	return func(c *config) { c.messageType = messageType }
}

// Serializer encodes the next message (default serialization.JSON). The
// payload is encoded here, so a serialization-decorated Writer passes it
// through unchanged.
func (OptionSet) Serializer(serializer serialization.Serializer) Option {
	return func(c *config) { c.serializer = serializer }
}

// Deserializer decodes an input the stack did not decode already (a raw
// transport, or FullDeliveryToHandler) into the step's input type (default
// serialization.JSON).
func (OptionSet) Deserializer(deserializer serialization.Deserializer) Option {
	return func(c *config) { c.deserializer = deserializer }
}

// Monitor receives the counts. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// RunObserver hears the runs that finish at this handler (or at a
// pipeline's steps), besides the observer the context carries
// (WithRunObserver): the way to give a pipeline's steps one, since their
// contexts are the pipeline's consumer's. Default: none.
func (OptionSet) RunObserver(observer RunObserver) Option {
	return func(c *config) { c.observer = observer }
}

// Logger is given to the consumer and retry decorators a pipeline runs
// (default slog.Default()). Then and FollowSlip do not log.
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// StepOptions is the entry point for configuring one step of a pipeline
// (Step): flow.StepOptions.Consumers(...).
var StepOptions StepOptionSet

// StepOptionSet holds the options of Step; each method returns a
// StepOption. It is exported so that go doc lists them.
type StepOptionSet struct{}

// StepOption configures Step.
type StepOption func(*stepConfig)

type stepConfig struct {
	consumers     int
	policy        retrypolicy.Policy
	description   string
	subscriptions []streaming.SubscriptionOption
}

func newStepConfig(opts []StepOption) stepConfig {
	c := options.New(opts)
	c.consumers = max(c.consumers, 1)
	if c.policy.IsZero() {
		c.policy = retrypolicy.Default()
	}
	return c
}

// Consumers runs n subscriptions on the step's queue, each with its own
// connection and prefetch, to scale one stage (default 1; below 1 means 1).
func (StepOptionSet) Consumers(n int) StepOption { return func(c *stepConfig) { c.consumers = n } }

// Retry is the step's retry budget (default retrypolicy.Default, the
// library's five attempts): a step that
// returns an error is republished with its attempt advanced after the
// policy's wait (in the process, or in a {queue}.retry.{d} rung for a long
// wait) and dead-lettered to {queue}.dlq when the policy gives up.
func (StepOptionSet) Retry(policy retrypolicy.Policy) StepOption {
	return func(c *stepConfig) { c.policy = policy }
}

// DescribedAs is a line about the step that Describe prints beside its name.
// Default: none.
func (StepOptionSet) DescribedAs(text string) StepOption {
	return func(c *stepConfig) { c.description = text }
}

// Subscription passes options to the step's streaming subscriptions
// (BatchCapacity, BufferCapacity, ShutdownStrategy, ...). The pipeline sets
// the queue, its topology, the workers and the retry policy itself. Default:
// none, the subscriptions' own defaults.
func (StepOptionSet) Subscription(subscription ...streaming.SubscriptionOption) StepOption {
	return func(c *stepConfig) { c.subscriptions = append(c.subscriptions, subscription...) }
}
