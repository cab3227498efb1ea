package prometheus

import "github.com/warrenmq/messaging/patterns/replay"

// Replay returns the replay.Monitor: replay_messages_total{stream,verdict}
// (moved, declined) and replay_passes_total{stream,reason}, with stream the
// queue replayed.
func (m *Metrics) Replay() replay.Monitor { return replayMonitor{m} }

type replayMonitor struct{ m *Metrics }

func (r replayMonitor) Moved(queue string) {
	r.m.replayMessages.WithLabelValues(r.m.stream(queue), string(replay.Moved)).Inc()
}

func (r replayMonitor) Declined(queue string) {
	r.m.replayMessages.WithLabelValues(r.m.stream(queue), string(replay.Declined)).Inc()
}

func (r replayMonitor) Finished(queue string, result replay.Result) {
	r.m.replayPasses.WithLabelValues(r.m.stream(queue), string(result.Reason)).Inc()
}
