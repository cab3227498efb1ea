package main

import (
	"context"
	"strings"
	"time"

	"github.com/warrenmq/messaging/patterns/claimcheck"
	"github.com/warrenmq/messaging/serialization"
)

// claimCheckScenario: a message below the claim-check threshold encoded and
// decoded through claimcheck over JSON, against JSON alone, in the same run.
// No broker: what the codec adds is the framing and one copy, so the ratio
// is the codec's own cost (target: at most 3% slower than JSON alone).
func claimCheckScenario(s settings) scenario {
	message := benchMessage{Data: strings.Repeat("x", max(0, min(s.size, claimcheck.DefaultThreshold-64)-12))}
	roundTrips := func(codec claimcheck.Delegate) run {
		return func(ctx context.Context, _ string) (measurement, error) {
			watch := startWatch()
			deadline := watch.start.Add(s.duration)
			n := 0
			for time.Now().Before(deadline) && ctx.Err() == nil {
				for range 100 {
					payload, err := codec.Serialize(message)
					if err != nil {
						return watch.stop(n), err
					}
					var decoded benchMessage
					if err := codec.Deserialize(payload, &decoded); err != nil {
						return watch.stop(n), err
					}
					n++
				}
			}
			return watch.stop(n), nil
		}
	}
	checked, err := claimcheck.New(nil, claimcheck.NewMemoryStore())
	if err != nil {
		panic(err) // New fails only without a store
	}
	return scenario{name: "claimcheck", allocs: true, sides: []side{
		{name: "json", run: roundTrips(serialization.JSON{})},
		{name: "claimcheck-inline", baseline: "json", run: roundTrips(checked)},
	}}
}
