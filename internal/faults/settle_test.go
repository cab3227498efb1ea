package faults

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging/handlers/deadletter"
)

// The scenarios that run the settlement decorator (handlers/deadletter) also
// count what it set aside: the checker drains {queue}.dlq and {queue}.parked
// at the end and reads each copy's x-acemq-id and x-acemq-error headers.

// setAside is what the checker found in a queue's .dlq and .parked: for each
// x-acemq-id, the reason (x-acemq-error) of every copy.
type setAside struct {
	dlq, parked map[string][]string
}

// copies returns how many messages the two queues held in all.
func (s setAside) copies() (dlq, parked int) {
	for _, reasons := range s.dlq {
		dlq += len(reasons)
	}
	for _, reasons := range s.parked {
		parked += len(reasons)
	}
	return dlq, parked
}

// declareSetAside declares queue's .dlq and .parked as the stream does (it
// declares them again when it opens) and deletes both when the test ends.
func declareSetAside(t *testing.T, url, queue string) {
	t.Helper()
	declareQueue(t, url, queue+".dlq", "")
	declareQueue(t, url, queue+".parked", "")
}

// drainSetAside drains queue's .dlq and .parked.
func drainSetAside(t *testing.T, url, queue string) setAside {
	t.Helper()
	s := setAside{dlq: map[string][]string{}, parked: map[string][]string{}}
	for target, into := range map[string]map[string][]string{queue + ".dlq": s.dlq, queue + ".parked": s.parked} {
		drainEach(t, url, target, func(d amqp.Delivery) {
			id, _ := d.Headers["x-acemq-id"].(string)
			reason, _ := d.Headers["x-acemq-error"].(string)
			into[id] = append(into[id], reason)
		})
	}
	return s
}

// expectation is where one poison message must end: target (".dlq" or
// ".parked") with a reason that starts with reason.
type expectation struct {
	target, reason string
}

// settlement compares what was set aside with what should have been: every
// expected id exactly once in its target with its reason, and nothing else.
type settlement struct {
	missing, misplaced, duplicated, wrongReason []string
}

func (s setAside) against(expected map[string]expectation) settlement {
	var r settlement
	for id, want := range expected {
		own, other := s.dlq, s.parked
		if want.target == ".parked" {
			own, other = s.parked, s.dlq
		}
		switch n := len(own[id]); {
		case n == 0:
			r.missing = append(r.missing, id)
		case n > 1:
			r.duplicated = append(r.duplicated, id)
		}
		if len(other[id]) > 0 {
			r.misplaced = append(r.misplaced, id)
		}
		for _, reason := range own[id] {
			if !strings.HasPrefix(reason, want.reason) {
				r.wrongReason = append(r.wrongReason, fmt.Sprintf("%s: %q", shortID(id), reason))
				break
			}
		}
	}
	for _, queue := range []map[string][]string{s.dlq, s.parked} {
		for id := range queue {
			if _, ok := expected[id]; !ok {
				r.misplaced = append(r.misplaced, id)
			}
		}
	}
	for _, list := range [][]string{r.missing, r.misplaced, r.duplicated, r.wrongReason} {
		sort.Strings(list)
	}
	return r
}

var setAsideHeader sync.Once

// reportSetAside prints the scenario's second line, the set-aside counts:
// copies found in .dlq and .parked, ids expected there that were not
// (missing), ids in the wrong queue or not expected at all (misplaced), and ids
// set aside more than once (duplicated).
func reportSetAside(scenario string, s setAside, r settlement) {
	setAsideHeader.Do(func() {
		fmt.Println("fault set-aside scenario dead-lettered parked missing misplaced duplicated")
	})
	dlq, parked := s.copies()
	fmt.Printf("fault set-aside %s %d %d %d %d %d\n", scenario, dlq, parked, len(r.missing), len(r.misplaced), len(r.duplicated))
}

// shortID cuts a long (foreign) id for a failure message.
func shortID(id string) string {
	if len(id) <= 40 {
		return id
	}
	return fmt.Sprintf("%s…(%d bytes)", id[:40], len(id))
}

func shortIDs(ids []string) string {
	shown := make([]string, 0, 5)
	for _, id := range ids[:min(len(ids), 5)] {
		shown = append(shown, shortID(id))
	}
	return strings.Join(shown, ", ")
}

// settleCounter is the deadletter Monitor of these scenarios: it counts each
// action.
type settleCounter struct {
	deadLettered, parked, held, failed atomic.Int64
}

func (c *settleCounter) Settled(_, action, _ string) {
	switch action {
	case deadletter.ActionDeadLettered:
		c.deadLettered.Add(1)
	case deadletter.ActionParked:
		c.parked.Add(1)
	case deadletter.ActionHeldForOutage:
		c.held.Add(1)
	case deadletter.ActionSetAsideFailed:
		c.failed.Add(1)
	}
}

// queueDepth returns how many ready messages queue holds, or -1 when the
// checker cannot tell.
func queueDepth(url, queue string) int {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		return -1
	}
	defer func() { _ = conn.Close() }()
	ch, err := conn.Channel()
	if err != nil {
		return -1
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		return -1
	}
	return q.Messages
}
