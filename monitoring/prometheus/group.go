package prometheus

import "github.com/warrenmq/messaging/patterns/group"

// Group returns the group.Monitor: group_started_total{stream,result}
// (success, failure) and group_members_closed_total{stream}.
func (m *Metrics) Group() group.Monitor { return groupMonitor{m} }

type groupMonitor struct{ m *Metrics }

func (g groupMonitor) Started(queue string, _ int) {
	g.m.groupStarts.WithLabelValues(g.m.stream(queue), "success").Inc()
}

func (g groupMonitor) StartFailed(queue string, _ error) {
	g.m.groupStarts.WithLabelValues(g.m.stream(queue), "failure").Inc()
}

func (g groupMonitor) MemberClosed(queue string) {
	g.m.groupMembersClosed.WithLabelValues(g.m.stream(queue)).Inc()
}
