package transporttest_test

import (
	"testing"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/transporttest"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/monitoring/otel"
	"github.com/warrenmq/messaging/serialization"
)

// decorators are the module's decorators of a transport, innermost first, as
// cmd/orders stacks them: tracing over the transport, the codec outermost.
func decorators() []transporttest.Decorator {
	tracing := otel.New()
	return []transporttest.Decorator{
		{Name: "otel.Transport", Wrap: tracing.Transport},
		{Name: "otel.Outbox", Wrap: tracing.Outbox},
		{Name: "serialization", Wrap: func(c messaging.Connector) messaging.Connector { return serialization.New(c) }},
	}
}

func TestNoDecoratorHidesACapabilityOfTheMemoryTransport(t *testing.T) {
	transporttest.RunCapabilities(t, func(t *testing.T) transporttest.Target {
		return transporttest.Target{Connector: memory.New(memory.Options.MaxMessageSize(maxPayload)), MaxPayload: maxPayload}
	}, decorators()...)
}

func TestNoDecoratorHidesACapabilityOfTheRabbitMQTransport(t *testing.T) {
	transporttest.RunCapabilities(t, rabbitMQTarget, decorators()...)
}
