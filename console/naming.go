package console

import (
	"slices"
	"strings"

	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/patterns/replay"
	"github.com/warrenmq/messaging/patterns/schedule"
	"github.com/warrenmq/messaging/retrypolicy"
)

// The roles a queue plays under the AceMQ naming.
const (
	roleSubscription = "subscription"
	roleDeadLetter   = "dead-letter"
	roleParked       = "parked"
	roleRetryRung    = "retry rung"
	roleScheduleRung = "schedule rung"
	roleScheduleDue  = "schedule due"
	roleStream       = "stream"
)

// watched is a queue the console samples, with the role its name gives it.
type watched struct {
	Name string
	Role string
}

// setAside reports whether a role holds set-aside messages, which the
// console browses and replays.
func setAside(role string) bool { return role == roleDeadLetter || role == roleParked }

// implied lists the queues the configuration names and what the naming
// implies for each, without repeats, in the order given.
func implied(c config) []watched {
	var list []watched
	seen := map[string]bool{}
	add := func(name, role string) {
		if name != "" && !seen[name] {
			seen[name] = true
			list = append(list, watched{Name: name, Role: role})
		}
	}
	for _, queue := range c.queues {
		add(queue, roleSubscription)
		add(wire.DeadLetterQueue(queue), roleDeadLetter)
		add(wire.ParkedQueue(queue), roleParked)
		for _, rung := range c.policy.Rungs(queue) {
			add(rung.Name, roleRetryRung+" "+retrypolicy.DelayName(rung.TTL))
		}
	}
	for _, stream := range c.streams {
		add(stream, roleStream)
		add(wire.DeadLetterQueue(stream), roleDeadLetter)
		add(wire.ParkedQueue(stream), roleParked)
	}
	if c.schedule {
		for _, rung := range schedule.Rungs() {
			add(rung.Name, roleScheduleRung+" "+retrypolicy.DelayName(rung.TTL))
		}
		add(schedule.DueQueue, roleScheduleDue)
		add(wire.DeadLetterQueue(schedule.DueQueue), roleDeadLetter)
	}
	return list
}

// roleOf is the role a queue's name gives it, as the console reads a name it
// was not told about (from the management API): "" when the name does not
// follow the naming. kind is the broker's queue type, when known.
func roleOf(name, kind string) string {
	switch {
	case kind == "stream":
		return roleStream
	case strings.HasSuffix(name, wire.DeadLetterSuffix):
		return roleDeadLetter
	case strings.HasSuffix(name, wire.ParkedSuffix):
		return roleParked
	case name == schedule.DueQueue:
		return roleScheduleDue
	case strings.HasPrefix(name, schedule.Exchange+"."):
		return roleScheduleRung
	case strings.Contains(name, ".retry."):
		return roleRetryRung
	}
	return ""
}

// following keeps the listed queues that follow the naming: a set-aside
// queue, a rung, a stream, or a queue that has a .dlq or .parked listed
// beside it (a subscription). known are added first as they are.
func following(known []watched, listed []listedQueue) []watched {
	names := make(map[string]bool, len(listed))
	for _, q := range listed {
		names[q.Name] = true
	}
	list := slices.Clone(known)
	seen := map[string]bool{}
	for _, w := range known {
		seen[w.Name] = true
	}
	for _, q := range listed {
		if seen[q.Name] {
			continue
		}
		role := roleOf(q.Name, q.Type)
		if role == "" && (names[wire.DeadLetterQueue(q.Name)] || names[wire.ParkedQueue(q.Name)]) {
			role = roleSubscription
		}
		if role != "" {
			seen[q.Name] = true
			list = append(list, watched{Name: q.Name, Role: role})
		}
	}
	return list
}

// sourceOf is the queue a set-aside queue's messages are replayed to, "" for
// another queue.
func sourceOf(queue string) string {
	source, _ := replay.SourceOf(queue)
	return source
}
