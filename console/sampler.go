package console

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
)

// sample is one reading of a queue.
type sample struct {
	At        time.Time
	Messages  int
	Consumers int
	Missing   bool
}

// series is a queue's readings within the window, oldest first.
type series struct {
	Queue   watched
	Samples []sample
	Err     string // the last reading's failure, if it failed
}

// Last is the newest reading, or a zero one.
func (s series) Last() sample {
	if len(s.Samples) == 0 {
		return sample{}
	}
	return s.Samples[len(s.Samples)-1]
}

// Rate is the net change of the queue's depth per second over the last
// minute of readings (in minus out; AMQP reports no rates): positive while
// it grows. ok is false with fewer than two readings.
func (s series) Rate() (rate float64, ok bool) {
	if len(s.Samples) < 2 {
		return 0, false
	}
	last := s.Samples[len(s.Samples)-1]
	first := last
	for i := len(s.Samples) - 2; i >= 0; i-- {
		if s.Samples[i].Missing || last.At.Sub(s.Samples[i].At) > time.Minute {
			break
		}
		first = s.Samples[i]
	}
	elapsed := last.At.Sub(first.At).Seconds()
	if elapsed <= 0 || last.Missing {
		return 0, false
	}
	return float64(last.Messages-first.Messages) / elapsed, true
}

// history keeps every watched queue's readings for the window.
type history struct {
	window   time.Duration
	capacity int
	round    sync.Mutex // one sampling round at a time

	mu       sync.Mutex
	series   map[string]*series
	order    []string
	at       time.Time // when the last round ended
	err      string    // why the last round could not read the broker
	listing  string    // where the queue list came from
	interval time.Duration
}

func newHistory(c config) *history {
	capacity := int(c.window/c.sampleInterval) + 1
	return &history{window: c.window, capacity: min(max(capacity, 2), 10_000), series: map[string]*series{}, interval: c.sampleInterval}
}

// snapshot copies the series in the order they were first watched.
func (h *history) snapshot() (list []series, at time.Time, err, listing string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range h.order {
		s := *h.series[name]
		s.Samples = append([]sample(nil), s.Samples...)
		list = append(list, s)
	}
	return list, h.at, h.err, h.listing
}

// record adds a round's readings, dropping what left the window.
func (h *history) record(at time.Time, readings []series, err, listing string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range readings {
		s := h.series[r.Queue.Name]
		if s == nil {
			s = &series{}
			h.series[r.Queue.Name] = s
			h.order = append(h.order, r.Queue.Name)
		}
		s.Queue, s.Err = r.Queue, r.Err
		s.Samples = append(s.Samples, r.Samples...)
		drop := 0
		for drop < len(s.Samples) && (at.Sub(s.Samples[drop].At) > h.window || len(s.Samples)-drop > h.capacity) {
			drop++
		}
		s.Samples = append(s.Samples[:0], s.Samples[drop:]...)
	}
	h.at, h.err, h.listing = at, err, listing
}

// stale reports whether the last round is older than the interval.
func (h *history) stale(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.at.IsZero() || now.Sub(h.at) >= h.interval
}

// sample reads every watched queue once: from the management API's listing
// when it answers, else with a passive declare per queue. A round already
// running is not doubled: the caller waits for it.
func (c *Console) sample(ctx context.Context) {
	c.history.round.Lock()
	defer c.history.round.Unlock()
	now := time.Now()
	known := implied(c.config)
	listing := "the queues named to the console and what their names imply"
	var listed map[string]listedQueue
	if c.config.management.address != "" {
		queues, err := c.config.management.list(ctx)
		if err != nil {
			listing = "the queues named to the console (the management API did not answer: " + c.redactErr(err) + ")"
		} else {
			listing = "the management API's list of the virtual host, and the queues named to the console"
			known = following(known, queues)
			listed = make(map[string]listedQueue, len(queues))
			for _, q := range queues {
				listed[q.Name] = q
			}
		}
	}
	readings := make([]series, 0, len(known))
	var roundErr error
	for _, w := range known {
		reading := series{Queue: w}
		if q, ok := listed[w.Name]; ok {
			reading.Samples = []sample{{At: now, Messages: q.Messages, Consumers: q.Consumers}}
		} else if listed != nil {
			reading.Samples = []sample{{At: now, Missing: true}}
		} else if roundErr == nil {
			state, err := c.inspect(ctx, w.Name)
			switch {
			case errors.Is(err, messaging.ErrNotFound):
				reading.Samples = []sample{{At: now, Missing: true}}
			case err != nil:
				reading.Err = c.redactErr(err)
				if messaging.IsConnectionLost(err) || errors.Is(err, errNoConnector) || ctx.Err() != nil {
					roundErr = err // the rest would fail alike: stop asking
				}
			default:
				reading.Samples = []sample{{At: now, Messages: state.Messages, Consumers: state.Consumers}}
			}
		}
		readings = append(readings, reading)
	}
	text := ""
	if roundErr != nil {
		text = fmt.Sprintf("the last sample could not read the broker: %s", c.redactErr(roundErr))
		c.config.logger.Warn("Console could not sample the queues; check that the broker answers", "error", c.redactErr(roundErr))
	}
	c.history.record(time.Now(), readings, text, listing)
}
