//go:build !race

package claimcheck

import (
	"math"
	"testing"
	"time"

	"github.com/warrenmq/messaging/serialization"
)

// TestInlineCostsAtMostThreePercentOverTheDelegate measures, in one run, the
// round trip of a typical message through JSON alone and through the claim
// check below its threshold, interleaved in blocks, and compares the fastest block of each
// (the least disturbed by other work on the machine). It takes up to three
// measurements before it fails, because a shared machine can slow one side
// for a whole measurement. The race detector's instrumentation changes both
// sides' costs, so this file is not built under -race.
func TestInlineCostsAtMostThreePercentOverTheDelegate(t *testing.T) {
	if testing.Short() {
		t.Skip("a timing measurement; run without -short")
	}
	codec, _ := New(nil, NewMemoryStore())
	const limit = 1.03
	var ratio float64
	for attempt := 1; attempt <= 3; attempt++ {
		inner, checked := fastest(t, serialization.JSON{}, codec)
		ratio = checked / inner
		t.Logf("measurement %d: JSON %.0f ns/op, claim check inline %.0f ns/op, ratio %.3f", attempt, inner, checked, ratio)
		if ratio <= limit {
			return
		}
	}
	t.Errorf("the claim check costs %.1f%% over its delegate below the threshold; the bound is %.0f%%", (ratio-1)*100, (limit-1)*100)
}

// fastest runs blocks of round trips of each codec alternately and returns
// each one's fastest block, in ns per round trip.
func fastest(t *testing.T, inner, checked Delegate) (float64, float64) {
	t.Helper()
	const blocks, perBlock = 200, 100
	message := sampleOrder()
	block := func(codec Delegate) float64 {
		began := time.Now()
		for range perBlock {
			payload, err := codec.Serialize(message)
			if err != nil {
				t.Fatal(err)
			}
			var decoded order
			if err := codec.Deserialize(payload, &decoded); err != nil {
				t.Fatal(err)
			}
		}
		return float64(time.Since(began).Nanoseconds()) / perBlock
	}
	a, b := math.Inf(1), math.Inf(1)
	for range blocks {
		a = min(a, block(inner))
		b = min(b, block(checked))
	}
	return a, b
}

// Over JSON the inline frame costs no allocation of its own: the payload is
// not copied a second time. (Not a fixture: gunit runs those in parallel,
// where allocations cannot be counted; and not under -race, whose sync.Pool
// drops buffers at random.)
func TestTheInlineFrameOverJSONCostsNoAllocation(t *testing.T) {
	codec, _ := New(serialization.JSON{}, NewMemoryStore())
	message := map[string]string{"note": "short"}
	framed := testing.AllocsPerRun(100, func() { _, _ = codec.Serialize(message) })
	plain := testing.AllocsPerRun(100, func() { _, _ = serialization.JSON{}.Serialize(message) })
	if framed != plain {
		t.Fatalf("%.0f allocations to serialize inline over JSON, %.0f for JSON alone; want the same", framed, plain)
	}
}
