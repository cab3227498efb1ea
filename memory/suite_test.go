package memory_test

import (
	"testing"

	"github.com/warrenmq/messaging/internal/transporttest"
	"github.com/warrenmq/messaging/memory"
)

func TestMemoryPassesTheTransportSuite(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transporttest.Target {
		broker := memory.New()
		return transporttest.Target{Connector: broker, Topology: broker}
	})
}
