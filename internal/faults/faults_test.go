package faults

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// full selects the sizes the issue names; without it every scenario runs in a
// short form that keeps this package at about two minutes.
var full = flag.Bool("faults.full", false, "run the fault scenarios at full size (make faults)")

// size returns long under -faults.full and short otherwise.
func size[T any](short, long T) T {
	if *full {
		return long
	}
	return short
}

// brokerTimeout bounds every broker wait of the transports the scenarios build,
// so that a severed or blocked connection resolves well within a scenario.
const brokerTimeout = 5 * time.Second

// ---------------------------------------------------------------------------
// counting

// tally counts a scenario's messages by id: which were sent (a publish or commit
// was attempted), which were confirmed (the call that carried them returned
// success for them), and how many times each was handled.
type tally struct {
	mu        sync.Mutex
	sent      map[string]struct{}
	confirmed map[string]struct{}
	handled   map[string]int
}

func newTally() *tally {
	return &tally{
		sent:      map[string]struct{}{},
		confirmed: map[string]struct{}{},
		handled:   map[string]int{},
	}
}

func (t *tally) send(ids ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		t.sent[id] = struct{}{}
	}
}

func (t *tally) confirm(ids ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		t.confirmed[id] = struct{}{}
	}
}

func (t *tally) handle(ids ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		t.handled[id]++
	}
}

// missing returns how many confirmed ids have not been handled yet.
func (t *tally) missing() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for id := range t.confirmed {
		if t.handled[id] == 0 {
			n++
		}
	}
	return n
}

// counts is the summary of a tally.
type counts struct {
	sent, confirmed, handled, lost, duplicated int
	lostIDs                                    []string
}

func (t *tally) counts() counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := counts{sent: len(t.sent), confirmed: len(t.confirmed), handled: len(t.handled)}
	for id := range t.confirmed {
		if t.handled[id] == 0 {
			c.lost++
			c.lostIDs = append(c.lostIDs, id)
		}
	}
	for _, n := range t.handled {
		if n > 1 {
			c.duplicated++
		}
	}
	sort.Strings(c.lostIDs)
	return c
}

var header sync.Once

// report prints the scenario's line and fails the test when anything confirmed
// was lost.
func report(t *testing.T, scenario string, tl *tally, started time.Time) counts {
	t.Helper()
	c := tl.counts()
	header.Do(func() {
		fmt.Println("fault scenario sent confirmed handled lost duplicated seconds")
	})
	fmt.Printf("fault %s %d %d %d %d %d %.1f\n", scenario, c.sent, c.confirmed, c.handled, c.lost, c.duplicated, time.Since(started).Seconds())
	if c.lost > 0 {
		shown := c.lostIDs[:min(len(c.lostIDs), 10)]
		t.Errorf("%s: %d confirmed message(s) were never handled (lost); the first: %s", scenario, c.lost, strings.Join(shown, ", "))
	}
	return c
}

// ---------------------------------------------------------------------------
// goroutines and connections

// baseline records the goroutine count when a scenario starts and the broker
// connections carrying the scenario's connection name, so that the scenario can
// check both returned to it.
type baseline struct {
	goroutines  int
	name        string
	connections int
}

func takeBaseline(t *testing.T, name string) baseline {
	t.Helper()
	n, err := brokerConnections(name)
	if err != nil {
		t.Fatalf("count broker connections: %v", err)
	}
	return baseline{goroutines: runtime.NumGoroutine(), name: name, connections: n}
}

// check waits (bounded) for the goroutine count and the named broker
// connections to return to their start values, and fails the test when they do
// not.
func (b baseline) check(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	goroutines := runtime.NumGoroutine()
	if !testenv.Poll(time.Until(deadline), func() bool {
		goroutines = runtime.NumGoroutine()
		return goroutines <= b.goroutines
	}) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutines did not return to their start value: %d at the start, %d at the end\n%s", b.goroutines, goroutines, buf)
	}
	var connections int
	var err error
	testenv.Poll(time.Until(deadline), func() bool {
		connections, err = brokerConnections(b.name)
		return err == nil && connections <= b.connections
	})
	if err != nil {
		t.Errorf("count broker connections: %v", err)
	} else if connections > b.connections {
		t.Errorf("broker connections named %q did not return to their start value: %d at the start, %d at the end", b.name, b.connections, connections)
	}
}

// brokerConnections counts the broker's connections whose name or client
// properties carry name (the connection_name set with
// rabbitmq.Options.ConnectionName).
func brokerConnections(name string) (int, error) {
	out, err := rabbitmqctl(context.Background(), "-q", "list_connections", "--no-table-headers", "name", "client_properties")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, name) {
			n++
		}
	}
	return n, nil
}

// peakGoroutines samples runtime.NumGoroutine until stopped and keeps the
// largest value.
type peakGoroutines struct {
	mu   sync.Mutex
	peak int
}

func (p *peakGoroutines) sample() {
	n := runtime.NumGoroutine()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peak = max(p.peak, n)
}

func (p *peakGoroutines) value() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// ---------------------------------------------------------------------------
// commands

// rabbitmqctl runs rabbitmqctl, bounded to a minute, and returns its output. It
// does not touch a testing.T, so background disruptors may call it.
func rabbitmqctl(ctx context.Context, args ...string) (string, error) {
	return run(ctx, time.Minute, "rabbitmqctl", args...)
}

func run(ctx context.Context, bound time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// disruptor runs a command every interval in a goroutine it owns, until stopped.
type disruptor struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	runs   int
	errs   []error
}

// every starts running action every interval (the first after one interval).
func every(interval time.Duration, action func(ctx context.Context) error) *disruptor {
	ctx, cancel := context.WithCancel(context.Background())
	d := &disruptor{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			err := action(ctx)
			d.mu.Lock()
			d.runs++
			if err != nil && ctx.Err() == nil {
				d.errs = append(d.errs, err)
			}
			d.mu.Unlock()
		}
	}()
	return d
}

// stop ends the goroutine, waits for it (each action is bounded), and returns
// how many times the action ran and its errors.
func (d *disruptor) stop() (int, []error) {
	d.cancel()
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runs, d.errs
}

// closeAllConnections is the disruption of scenarios 1 and 2.
func closeAllConnections(ctx context.Context) error {
	_, err := rabbitmqctl(ctx, "close_all_connections", "fault suite: closing every connection")
	return err
}

// stopDisruptor stops d and fails the test when the disruption never ran or
// kept failing: a fault scenario whose fault did not happen proves nothing.
func stopDisruptor(t *testing.T, d *disruptor) int {
	t.Helper()
	runs, errs := d.stop()
	if runs == 0 {
		t.Errorf("the disruption never ran; the scenario proved nothing")
	}
	if len(errs) > 0 {
		t.Errorf("the disruption failed %d of %d time(s); the first: %v", len(errs), runs, errs[0])
	}
	return runs
}

// ---------------------------------------------------------------------------
// library plumbing

// transport returns the RabbitMQ connector a user would build, with the
// scenario's connection name.
func transport(t *testing.T, url, name string) messaging.Connector {
	return rabbitmq.New(
		rabbitmq.Options.Address(url),
		rabbitmq.Options.ConnectionName(name),
		rabbitmq.Options.BrokerTimeout(brokerTimeout),
		rabbitmq.Options.Logger(logger(t)),
	)
}

// logger sends the library's ERROR lines to the test log (WARN and INFO lines
// are expected while the services are disturbed and would drown the output).
// Lines logged after the test ended go to stderr instead of panicking.
func logger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.finish)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelError}))
}

type testWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return os.Stderr.Write(p)
	}
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (w *testWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
}

var _ io.Writer = (*testWriter)(nil)

// work takes d of real time, as a handler's or a service's real work does.
// The suite's disruptions run on the broker's wall clock (close_all_connections
// every interval, a node's restart, an outage's length): work paced like this
// spans them instead of finishing before the first.
func work(d time.Duration) {
	time.Sleep(d) // real time: the disruptions it must span are timed in real time
}

// ids returns n fresh message ids.
func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = messaging.NewID()
	}
	return out
}
