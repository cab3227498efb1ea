package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/patterns/replay"
)

// The kinds of job.
const (
	jobCount  = "count"  // a replay's dry run: how many would move
	jobReplay = "replay" // the replay itself, at most what was counted
	jobCensus = "census" // every reason of a queue counted
)

// keptJobs bounds how many finished jobs the console remembers.
const keptJobs = 50

// scope is what a replay takes from its queue: a group, a selection of
// messages, or a filter.
type scope struct {
	Kind          string // "group", "selection" or "filter"
	Group         string // the group's key
	Reason        string // the group's folded reason, for people
	IDs           []string
	Type          string
	ErrorContains string
	HeaderName    string
	HeaderValue   string
}

// String says what the scope takes, for people.
func (s scope) String() string {
	switch s.Kind {
	case "group":
		return fmt.Sprintf("the messages set aside for %q", s.Reason)
	case "selection":
		return fmt.Sprintf("%d selected message(s)", len(s.IDs))
	}
	var parts []string
	if s.Type != "" {
		parts = append(parts, fmt.Sprintf("of type %q", s.Type))
	}
	if s.ErrorContains != "" {
		parts = append(parts, fmt.Sprintf("whose reason contains %q", s.ErrorContains))
	}
	if s.HeaderName != "" {
		parts = append(parts, fmt.Sprintf("whose header %s is %q", s.HeaderName, s.HeaderValue))
	}
	if len(parts) == 0 {
		return "every message"
	}
	return "the messages " + strings.Join(parts, " and ")
}

// filter is the replay filter of s.
func (c *Console) filter(s scope) func(messaging.Delivery) bool {
	switch s.Kind {
	case "group":
		return func(d messaging.Delivery) bool { return c.reasonOf(&d) == s.Group }
	case "selection":
		ids := make(map[string]bool, len(s.IDs))
		for _, id := range s.IDs {
			ids[id] = true
		}
		return func(d messaging.Delivery) bool { return ids[d.MessageID] }
	}
	return func(d messaging.Delivery) bool {
		if s.Type != "" && d.MessageType != s.Type {
			return false
		}
		if s.ErrorContains != "" && !strings.Contains(d.Error, s.ErrorContains) {
			return false
		}
		if s.HeaderName != "" {
			value, ok := d.Headers[s.HeaderName]
			if !ok || (wire.Text(value) != s.HeaderValue && fmt.Sprint(value) != s.HeaderValue) {
				return false
			}
		}
		return true
	}
}

// job is one count, replay or census, run by the console in the background.
type job struct {
	ID          string
	Kind        string
	Queue       string
	Destination string
	Scope       scope
	Limit       int // for a replay: the count the operator confirmed
	Counted     int // for a count: how many would move
	Started     time.Time

	read, moved, skipped atomic.Int64
	done                 chan struct{}

	// Set before done is closed.
	Finished time.Time
	Result   replay.Result
	Err      string
	Census   *census
}

// census is a full count of a queue's reasons.
type census struct {
	At       time.Time
	Scan     scanned
	Groups   []group
	Overflow int
}

// Running reports a job that has not finished.
func (j *job) Running() bool {
	select {
	case <-j.done:
		return false
	default:
		return true
	}
}

// Progress is what the job has read, moved and skipped so far.
func (j *job) Progress() (read, moved, skipped int64) {
	return j.read.Load(), j.moved.Load(), j.skipped.Load()
}

// Elapsed is how long the job ran, or has run so far.
func (j *job) Elapsed() time.Duration {
	if j.Running() {
		return time.Since(j.Started).Round(100 * time.Millisecond)
	}
	return j.Finished.Sub(j.Started).Round(time.Millisecond)
}

// jobs are the console's jobs: at most one running per queue, the last
// keptJobs finished ones remembered, and each queue's latest census.
type jobs struct {
	mu       sync.Mutex
	byID     map[string]*job
	order    []string
	busy     map[string]*job
	censuses map[string]*census
}

func newJobs() *jobs {
	return &jobs{byID: map[string]*job{}, busy: map[string]*job{}, censuses: map[string]*census{}}
}

func (js *jobs) get(id string) (*job, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j, ok := js.byID[id]
	return j, ok
}

// running is the job running on queue, if any.
func (js *jobs) running(queue string) *job {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.busy[queue]
}

func (js *jobs) latestCensus(queue string) *census {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.censuses[queue]
}

// add registers j as running on its queue, unless another job is.
func (js *jobs) add(j *job) error {
	js.mu.Lock()
	defer js.mu.Unlock()
	if other := js.busy[j.Queue]; other != nil {
		return fmt.Errorf("a %s of %s is running (started %s); wait for it to finish: two passes over one queue would each hold what the other needs",
			other.Kind, j.Queue, other.Started.Format(time.TimeOnly))
	}
	js.busy[j.Queue] = j
	js.byID[j.ID] = j
	js.order = append(js.order, j.ID)
	for len(js.order) > keptJobs {
		oldest := js.byID[js.order[0]]
		if oldest.Running() {
			break
		}
		delete(js.byID, js.order[0])
		js.order = js.order[1:]
	}
	return nil
}

// finish records j's end and frees its queue.
func (js *jobs) finish(j *job) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j.Finished = time.Now()
	if j.Census != nil {
		js.censuses[j.Queue] = j.Census
	}
	delete(js.busy, j.Queue)
	close(j.done)
}

// list is every remembered job, newest first.
func (js *jobs) list() []*job {
	js.mu.Lock()
	defer js.mu.Unlock()
	list := make([]*job, 0, len(js.order))
	for _, id := range js.order {
		list = append(list, js.byID[id])
	}
	slices.Reverse(list)
	return list
}

func newJobID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// start runs j in the background with run, owned by the console: Close
// cancels it and waits for it.
func (c *Console) start(j *job, run func(ctx context.Context, j *job)) error {
	if c.config.connector == nil {
		return errNoConnector
	}
	j.ID, j.Started, j.done = newJobID(), time.Now(), make(chan struct{})
	if err := c.jobs.add(j); err != nil {
		return err
	}
	c.config.logger.Info("Console job started", "job", j.ID, "kind", j.Kind, "queue", j.Queue, "scope", j.Scope.String(), "limit", j.Limit)
	c.work.Add(1)
	go func() {
		defer c.work.Done()
		defer c.jobs.finish(j)
		run(c.life, j)
		attrs := []any{"job", j.ID, "kind", j.Kind, "queue", j.Queue, "result", j.Result.String()}
		if j.Err != "" {
			attrs = append(attrs, "error", j.Err)
		}
		c.config.logger.Info("Console job finished", attrs...)
	}()
	return nil
}

// startCount starts the dry run of a replay of s from queue.
func (c *Console) startCount(queue string, s scope) (*job, error) {
	source, ok := replay.SourceOf(queue)
	if !ok {
		return nil, fmt.Errorf("%s is not a dead-letter or parking queue: the console replays only set-aside messages", queue)
	}
	j := &job{Kind: jobCount, Queue: queue, Destination: source, Scope: s}
	return j, c.start(j, func(ctx context.Context, j *job) {
		from := replay.From{Queue: queue, Filter: c.filter(s), DryRun: true, Deadline: time.Now().Add(c.config.countTimeout)}
		j.Result, j.Err = c.replay(ctx, j, from)
		j.Counted = j.Result.Moved
	})
}

// startReplay starts the replay a finished count was confirmed for: at
// most the counted number of messages of its scope.
func (c *Console) startReplay(count *job) (*job, error) {
	if count.Kind != jobCount || count.Running() {
		return nil, fmt.Errorf("job %s is not a finished count; count the messages first", count.ID)
	}
	if count.Counted == 0 {
		return nil, fmt.Errorf("the count found nothing to replay in %s", count.Queue)
	}
	j := &job{Kind: jobReplay, Queue: count.Queue, Destination: count.Destination, Scope: count.Scope, Limit: count.Counted}
	return j, c.start(j, func(ctx context.Context, j *job) {
		from := replay.From{Queue: j.Queue, Filter: c.filter(j.Scope), Limit: j.Limit}
		j.Result, j.Err = c.replay(ctx, j, from)
	})
}

// replay runs one pass of patterns/replay, counting its progress into j.
func (c *Console) replay(ctx context.Context, j *job, from replay.From) (replay.Result, string) {
	each := replay.Options.Each(func(_ messaging.Delivery, verdict replay.Verdict) {
		j.read.Add(1)
		if verdict == replay.Moved {
			j.moved.Add(1)
		} else {
			j.skipped.Add(1)
		}
	})
	result, err := replay.Run(ctx, c.config.connector, from, each)
	return result, c.redactErr(err)
}

// startCensus starts a count of every reason in queue, within CensusLimit
// and CensusTimeout.
func (c *Console) startCensus(queue string) (*job, error) {
	j := &job{Kind: jobCensus, Queue: queue}
	return j, c.start(j, func(ctx context.Context, j *job) {
		grouping := newGrouping()
		scan, err := c.scan(ctx, queue, c.config.censusLimit, c.config.censusTimeout, func(_ int, d *messaging.Delivery) bool {
			j.read.Add(1)
			grouping.add(c.redact(d.Error), seenAt(d))
			return ctx.Err() == nil
		})
		j.Err = c.redactErr(err)
		j.Census = &census{At: time.Now(), Scan: scan, Groups: grouping.groups(), Overflow: grouping.overflow}
	})
}
