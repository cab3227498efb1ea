package schedule

import (
	"strings"
	"testing"
	"time"
)

// TestTheTopologyIsTheCrossLanguageContract pins the names, TTLs and exactly
// three arguments of the AceMQ family's scheduler table (doc/contracts.md), and how the plan prints.
func TestTheTopologyIsTheCrossLanguageContract(t *testing.T) {
	want := map[string]int64{
		"acemq.schedule.1h": 3600000, "acemq.schedule.10m": 600000, "acemq.schedule.1m": 60000,
		"acemq.schedule.10s": 10000, "acemq.schedule.1s": 1000,
	}
	plan := Topology()
	if err := plan.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(plan.Exchanges) != 1 || plan.Exchanges[0].Name != "acemq.schedule" || plan.Exchanges[0].Kind != "direct" || !plan.Exchanges[0].Durable {
		t.Fatalf("exchanges %+v", plan.Exchanges)
	}
	if len(plan.Queues) != 6 || len(plan.Bindings) != 6 {
		t.Fatalf("%d queues, %d bindings", len(plan.Queues), len(plan.Bindings))
	}
	for i, q := range plan.Queues {
		b := plan.Bindings[i]
		if b.Exchange != "acemq.schedule" || b.Queue != q.Name || b.Key != q.Name {
			t.Errorf("binding %+v for %s", b, q.Name)
		}
		if !q.Durable || q.Exclusive || q.AutoDelete || q.Type != "" {
			t.Errorf("%s is not classic and durable: %+v", q.Name, q)
		}
		if q.Name == "acemq.schedule.due" {
			if len(q.Arguments) != 0 {
				t.Errorf("the due queue has arguments %v", q.Arguments)
			}
			continue
		}
		ttl, ok := want[q.Name]
		if !ok || len(q.Arguments) != 3 || q.Arguments["x-message-ttl"] != ttl ||
			q.Arguments["x-dead-letter-exchange"] != "acemq.schedule" || q.Arguments["x-dead-letter-routing-key"] != "acemq.schedule.due" {
			t.Errorf("%s: %v", q.Name, q.Arguments)
		}
		delete(want, q.Name)
	}
	if len(want) != 0 {
		t.Errorf("missing rungs %v", want)
	}
	printed := plan.String()
	for _, line := range []string{
		"declare exchange acemq.schedule (direct, durable)\n",
		"declare queue acemq.schedule.10s (classic, durable, x-dead-letter-exchange=acemq.schedule, x-dead-letter-routing-key=acemq.schedule.due, x-message-ttl=10000)\n",
		"declare queue acemq.schedule.due (classic, durable)\n",
		"bind acemq.schedule -> acemq.schedule.1h (acemq.schedule.1h)\n",
	} {
		if !contains(printed, line) {
			t.Errorf("the plan prints\n%s\nwithout %q", printed, line)
		}
	}
	if RungName(90*time.Minute) != "acemq.schedule.90m" || RungName(1500*time.Millisecond) != "acemq.schedule.1s" {
		t.Error(RungName(90*time.Minute), RungName(1500*time.Millisecond))
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
