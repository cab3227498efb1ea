package flow

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// Options configures Then, FollowSlip and NewPipeline. It is a singleton
// whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be
// collected in a slice. An Option is also a PipelinePart: it can be listed
// among a pipeline's steps.
type Option = option

func (option) pipelinePart() {}

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
	now          func() time.Time
}

func newConfig(options []option) config {
	c := config{}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.pipeline == "" && c.route.Name != "" {
		c.pipeline = c.route.Name
	}
	if c.serializer == nil {
		c.serializer = serialization.JSON{}
	}
	if c.deserializer == nil {
		c.deserializer = serialization.JSON{}
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// InPipeline names the pipeline a Then or FollowSlip step belongs to, for
// run reports: a run that finishes at a step is reported (Monitor.RunFinished
// and the context's RunObserver) only when its pipeline is named.
func (singleton) InPipeline(name string) option {
	return func(c *config) { c.pipeline = name }
}

// AtStep names the step, for run reports and the Monitor. FollowSlip
// defaults to the name of the stop it is doing.
func (singleton) AtStep(step string) option {
	return func(c *config) { c.step = step }
}

// AlongRoute gives FollowSlip the declared route its messages travel: a
// message that carries its slip as route headers (x-acemq-route, Java's
// form) is forwarded to the route's exchange under the next step's name. It
// also names the pipeline (InPipeline) unless that is set.
func (singleton) AlongRoute(route Route) option {
	return func(c *config) { c.route = route }
}

// MessageType is the type Then writes on the next message (default: none,
// which the wire contract reads as the routing key).
func (singleton) MessageType(messageType string) option {
	return func(c *config) { c.messageType = messageType }
}

// Serializer encodes the next message (default serialization.JSON). The
// payload is encoded here, so a serialization-decorated Writer passes it
// through unchanged.
func (singleton) Serializer(serializer serialization.Serializer) option {
	return func(c *config) { c.serializer = serializer }
}

// Deserializer decodes an input the stack did not decode already (a raw
// transport, or FullDeliveryToHandler) into the step's input type (default
// serialization.JSON).
func (singleton) Deserializer(deserializer serialization.Deserializer) option {
	return func(c *config) { c.deserializer = deserializer }
}

// Monitor receives the counts (default: none).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}

// RunObserver hears the runs that finish at this handler (or at a
// pipeline's steps), besides the observer the context carries
// (WithRunObserver): the way to give a pipeline's steps one, since their
// contexts are the pipeline's consumer's.
func (singleton) RunObserver(observer RunObserver) option {
	return func(c *config) { c.observer = observer }
}

// Logger is given to the consumer and retry decorators a pipeline runs
// (default slog.Default()). Then and FollowSlip do not log.
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *config) { c.logger = logger }
}

// StepOptions configures one step of a pipeline (Step). It is a singleton
// whose methods return options.
var StepOptions stepSingleton

type stepSingleton struct{}

type stepOption func(*stepConfig)

// StepOption is the type of StepOptions' values.
type StepOption = stepOption

type stepConfig struct {
	consumers     int
	policy        retrypolicy.Policy
	description   string
	subscriptions []streaming.SubscriptionOption
}

func newStepConfig(options []stepOption) stepConfig {
	c := stepConfig{}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.consumers < 1 {
		c.consumers = 1
	}
	if c.policy.IsZero() {
		c.policy = retrypolicy.Default()
	}
	return c
}

// Consumers runs n subscriptions on the step's queue, each with its own
// connection and prefetch, to scale one stage (default 1; below 1 means 1).
func (stepSingleton) Consumers(n int) stepOption {
	return func(c *stepConfig) { c.consumers = n }
}

// Retry is the step's retry budget (default retrypolicy.Default, the
// library's five attempts): a step that
// returns an error is republished with its attempt advanced after the
// policy's wait (in the process, or in a {queue}.retry.{d} rung for a long
// wait) and dead-lettered to {queue}.dlq when the policy gives up.
func (stepSingleton) Retry(policy retrypolicy.Policy) stepOption {
	return func(c *stepConfig) { c.policy = policy }
}

// DescribedAs is a line about the step that Describe prints beside its name.
func (stepSingleton) DescribedAs(text string) stepOption {
	return func(c *stepConfig) { c.description = text }
}

// Subscription passes options to the step's streaming subscriptions
// (BatchCapacity, BufferCapacity, ShutdownStrategy, ...). The pipeline sets
// the queue, its topology, the workers and the retry policy itself.
func (stepSingleton) Subscription(options ...streaming.SubscriptionOption) stepOption {
	return func(c *stepConfig) { c.subscriptions = append(c.subscriptions, options...) }
}
