package memory_test

import (
	"testing"

	"github.com/warrenmq/messaging/internal/transporttest"
	"github.com/warrenmq/messaging/memory"
)

func TestMemoryPassesTheTransportSuite(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transporttest.Target {
		const maxPayload = 64 << 10
		broker := memory.New(memory.Options.MaxMessageSize(maxPayload))
		return transporttest.Target{Connector: broker, MaxPayload: maxPayload}
	})
}
