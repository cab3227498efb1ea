package retrypolicy

import (
	"testing"
	"time"
)

func TestDelayNameSpellsADelayAsRungNamesDo(t *testing.T) {
	for delay, want := range map[time.Duration]string{
		time.Hour: "1h", 10 * time.Minute: "10m", time.Minute: "1m", 10 * time.Second: "10s",
		time.Second: "1s", 80 * time.Second: "80s", 1500 * time.Millisecond: "1s", 500 * time.Millisecond: "0s",
	} {
		if got := DelayName(delay); got != want {
			t.Errorf("DelayName(%s) = %q, want %q", delay, got, want)
		}
		if got := RungName("q", delay); got != "q.retry."+want {
			t.Errorf("RungName(q, %s) = %q, DelayName %q", delay, got, want)
		}
	}
}
