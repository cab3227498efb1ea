// Command bench measures this library beside the raw amqp091-go client (and,
// for the outbox, beside hand-written SQL), in one process and one run, on the
// local broker and MariaDB, and prints one line per side of each scenario:
//
//	scenario msgs seconds msgs/s ratio
//
// where ratio = ours / the side's baseline (a raw side of the same scenario).
// Lines starting with # add allocations per message, latency percentiles and
// the outbox's dispatch lag. Runs alternate between raw and ours so that a
// noisy neighbour hurts both alike; read the ratios, not the absolute rates.
// It deletes every queue it declares and drops every table it creates.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

type settings struct {
	url        string
	dsn        string
	size       int
	duration   time.Duration
	rounds     int
	window     int
	messages   int
	roundtrips int
}

// measurement is what one run of one side produced.
type measurement struct {
	msgs    int
	elapsed time.Duration
	// mallocs and allocated are the process's heap allocations during the
	// timed part, and their bytes.
	mallocs, allocated uint64
	// cpu is the process's CPU time (user and system) during the timed part:
	// what a side costs the machine, which the host's noise moves far less
	// than its rate.
	cpu time.Duration
	// latencies are per-message times, for the scenarios that take them.
	latencies []time.Duration
	// lag is, for the outbox, how long after the last commit the broker held
	// the last message.
	lag time.Duration
	// batches is, for the outbox, how many batches its dispatcher published.
	batches int
}

func (m *measurement) add(other measurement) {
	m.msgs += other.msgs
	m.elapsed += other.elapsed
	m.mallocs += other.mallocs
	m.allocated += other.allocated
	m.cpu += other.cpu
	m.latencies = append(m.latencies, other.latencies...)
	m.lag = max(m.lag, other.lag)
	m.batches += other.batches
}

func (m measurement) rate() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.msgs) / m.elapsed.Seconds()
}

func (m measurement) allocsPerMessage() float64 {
	if m.msgs == 0 {
		return 0
	}
	return float64(m.mallocs) / float64(m.msgs)
}

// bytesPerMessage is the heap bytes allocated per message.
func (m measurement) bytesPerMessage() float64 {
	if m.msgs == 0 {
		return 0
	}
	return float64(m.allocated) / float64(m.msgs)
}

// cpuPerMessage is the process's CPU time per message, in microseconds.
func (m measurement) cpuPerMessage() float64 {
	if m.msgs == 0 {
		return 0
	}
	return float64(m.cpu.Microseconds()) / float64(m.msgs)
}

// stopwatch times the measured part of a run and counts the heap allocations
// and the CPU time the whole process used meanwhile.
type stopwatch struct {
	start              time.Time
	mallocs, allocated uint64
	cpu                time.Duration
}

func startWatch() stopwatch {
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stopwatch{start: time.Now(), mallocs: stats.Mallocs, allocated: stats.TotalAlloc, cpu: processCPU()}
}

func (w stopwatch) stop(msgs int) measurement {
	elapsed := time.Since(w.start)
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return measurement{msgs: msgs, elapsed: elapsed, mallocs: stats.Mallocs - w.mallocs, allocated: stats.TotalAlloc - w.allocated, cpu: processCPU() - w.cpu}
}

// processCPU is the user and system CPU time this process has used so far
// (zero where the system cannot tell).
func processCPU() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// run is one side of a scenario: it runs once and reports what it did.
type run func(ctx context.Context, queue string) (measurement, error)

type scenario struct {
	name  string
	sides []side
	// allocs prints the allocations per message of every side.
	allocs bool
	// setup, when set, prepares what the sides share beyond the queue (tables)
	// and returns how to remove it.
	setup func(ctx context.Context) (cleanup func(), err error)
	// report, when set, prints comment lines from the sides' totals, in the
	// order of sides.
	report func(totals []measurement)
	// once, when set, runs instead of the sides and rounds: a scenario whose
	// figures are not rates (memory) prints its own lines.
	once func(ctx context.Context) error
}

// side is one way of doing what the scenario measures. Its ratio is taken
// against the side named by baseline; a side without one is a baseline.
type side struct {
	name     string
	baseline string
	run      run
}

func main() {
	var s settings
	var only, cpuProfile, memProfile string
	flag.StringVar(&s.url, "amqp", envOr("WARRENMQ_AMQP", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ address")
	flag.StringVar(&s.dsn, "dsn", envOr("WARRENMQ_MYSQL", "root@tcp(127.0.0.1:3306)/test?parseTime=true"), "MariaDB/MySQL data source for the outbox scenario")
	flag.IntVar(&s.size, "size", 1024, "payload size in bytes")
	flag.DurationVar(&s.duration, "duration", 3*time.Second, "time per publish and outbox run")
	flag.IntVar(&s.rounds, "rounds", 3, "alternating rounds per scenario; the ratio is the median of the rounds' ratios")
	flag.IntVar(&s.window, "window", 1000, "unconfirmed publishes allowed in flight (both sides)")
	flag.IntVar(&s.messages, "messages", 20000, "messages per consume run")
	flag.IntVar(&s.roundtrips, "roundtrips", 2000, "sequential publish-and-receive round trips per roundtrip run")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file, each side labelled (pprof -tagfocus side=NAME)")
	flag.StringVar(&memProfile, "memprofile", "", "write the allocations of the whole run to this file (pprof -sample_index=alloc_objects; not labelled by side)")
	flag.StringVar(&only, "only", "", "comma-separated scenarios to run (publish, consume, outbox, roundtrip, request, claimcheck, tracing, patterns, stream, concurrent, memory, scale); empty runs all")
	flag.Parse()

	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	release, err := shareBroker()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer release()
	if cpuProfile != "" {
		stopProfile, err := startCPUProfile(cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer stopProfile()
	}
	if memProfile != "" {
		stopProfile, err := startMemProfile(memProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer stopProfile()
	}
	// An interrupt ends the runs early; the queues and tables are still removed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, s, only); err != nil {
		stop()
		release()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

const (
	brokerLockPath   = "/tmp/warrenmq-broker-test.lock"
	databaseLockPath = "/tmp/warrenmq-database-test.lock"
	// lockLimit bounds the wait for a fault test to release a lock.
	lockLimit = 5 * time.Minute
)

// shareBroker takes the broker lock the test suite uses, shared, so the bench
// never runs while a fault test closes every connection or raises an alarm.
func shareBroker() (release func(), err error) {
	return shareLock(brokerLockPath)
}

// shareLock takes the test suite's lock at path, shared, waiting at most
// lockLimit for a test holding it exclusively to finish.
func shareLock(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("open the test lock %s: %w", path, err)
	}
	deadline := time.Now().Add(lockLimit)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = f.Close()
			return nil, fmt.Errorf("take the test lock %s (a fault test holds it; wait for it to end): %w", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startCPUProfile profiles the process's CPU into path until stop.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start the CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

func bench(ctx context.Context, s settings, only string) error {
	scenarios := []scenario{publishScenario(s), consumeScenario(s), outboxScenario(s), roundTripScenario(s), requestScenario(s), claimCheckScenario(s), tracingScenario(s), patternsScenario(s), streamScenario(s), concurrentScenario(s), memoryScenario(s), scaleScenario(s)}
	fmt.Printf("# payload %d B, window %d, %d rounds alternating raw and ours; ratio = the median over rounds of ours / baseline in the same round, spread = lowest-highest\n", s.size, s.window, s.rounds)
	fmt.Printf("%-24s %9s %8s %9s %6s %11s\n", "scenario", "msgs", "seconds", "msgs/s", "ratio", "spread")
	for _, sc := range scenarios {
		if only != "" && !strings.Contains(","+only+",", ","+sc.name+",") {
			continue
		}
		do := func() error { return runScenario(ctx, s, sc) }
		if sc.once != nil {
			do = func() error { return sc.once(ctx) }
		}
		if err := do(); err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
	}
	return nil
}

func runScenario(ctx context.Context, s settings, sc scenario) error {
	queue := "warrenmq-bench-" + messaging.NewID()[:8]
	if err := declareQueue(s.url, queue); err != nil {
		return err
	}
	defer deleteQueue(s.url, queue)
	if sc.setup != nil {
		cleanup, err := sc.setup(ctx)
		if err != nil {
			return err
		}
		defer cleanup()
	}

	totals := make([]measurement, len(sc.sides))
	rounds := make([][]measurement, len(sc.sides)) // each side's rounds, for the median and spread
	order := make([]int, len(sc.sides))
	for i := range order {
		order[i] = i
	}
	for range s.rounds {
		for _, i := range order {
			if err := purgeQueue(s.url, queue); err != nil {
				return err
			}
			var m measurement
			var err error
			// Labelled so a profile separates the sides: go tool pprof
			// -tagfocus side=ours-100 (goroutines started inside inherit it).
			pprof.Do(ctx, pprof.Labels("scenario", sc.name, "side", sc.sides[i].name), func(ctx context.Context) {
				m, err = sc.sides[i].run(ctx, queue)
			})
			if err != nil {
				return fmt.Errorf("%s: %w", sc.sides[i].name, err)
			}
			totals[i].add(m)
			rounds[i] = append(rounds[i], m)
		}
		slices.Reverse(order) // alternate who goes first
	}
	for i, sd := range sc.sides {
		baseline, baseRounds := totals[i], rounds[i]
		if j := sideIndex(sc.sides, sd.baseline); j >= 0 {
			baseline, baseRounds = totals[j], rounds[j]
		}
		printRow(sc.name+"/"+sd.name, totals[i], baseline, roundRatios(rounds[i], baseRounds))
	}
	if sc.allocs {
		parts := make([]string, len(sc.sides))
		for i, sd := range sc.sides {
			parts[i] = fmt.Sprintf("%s %.1f (%.0f B)", sd.name, totals[i].allocsPerMessage(), totals[i].bytesPerMessage())
		}
		fmt.Printf("# %s allocs/msg: %s\n", sc.name, strings.Join(parts, ", "))
		fmt.Printf("# %s cpu µs/msg (this process, not the broker's): %s\n", sc.name, cpuLine(sc.sides, totals))
	}
	if sc.report != nil {
		sc.report(totals)
	}
	return nil
}

// cpuLine gives each side's CPU time per message and, for a side with a
// baseline, its ratio to the baseline's.
func cpuLine(sides []side, totals []measurement) string {
	parts := make([]string, len(sides))
	for i, sd := range sides {
		parts[i] = fmt.Sprintf("%s %.1f", sd.name, totals[i].cpuPerMessage())
		if j := sideIndex(sides, sd.baseline); j >= 0 && totals[j].cpuPerMessage() > 0 {
			parts[i] += fmt.Sprintf(" (%.2fx)", totals[i].cpuPerMessage()/totals[j].cpuPerMessage())
		}
	}
	return strings.Join(parts, ", ")
}

func sideIndex(sides []side, name string) int {
	if name == "" {
		return -1
	}
	for i, sd := range sides {
		if sd.name == name {
			return i
		}
	}
	return -1
}

// roundRatios is each round's rate over the baseline's rate in the same
// round: a noisy neighbour in one round moves one ratio, not the median.
func roundRatios(side, baseline []measurement) []float64 {
	ratios := make([]float64, 0, len(side))
	for r := range min(len(side), len(baseline)) {
		if baseline[r].rate() > 0 {
			ratios = append(ratios, side[r].rate()/baseline[r].rate())
		}
	}
	slices.Sort(ratios)
	return ratios
}

// printRow prints the side's totals, the median of its per-round ratios (the
// ratio column) and their spread, lowest to highest.
func printRow(name string, m, baseline measurement, ratios []float64) {
	ratio, spread := 0.0, "-"
	switch n := len(ratios); {
	case n == 0:
		if baseline.rate() > 0 {
			ratio = m.rate() / baseline.rate()
		}
	case n%2 == 1:
		ratio = ratios[n/2]
	default:
		ratio = (ratios[n/2-1] + ratios[n/2]) / 2
	}
	if len(ratios) > 1 {
		spread = fmt.Sprintf("%.2f-%.2f", ratios[0], ratios[len(ratios)-1])
	}
	fmt.Printf("%-24s %9d %8.2f %9.0f %6.2f %11s\n", name, m.msgs, m.elapsed.Seconds(), m.rate(), ratio, spread)
}

func declareQueue(url, queue string) error {
	return withChannel(url, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(queue, true, false, false, false, nil)
		return err
	})
}

func purgeQueue(url, queue string) error {
	return withChannel(url, func(ch *amqp.Channel) error {
		_, err := ch.QueuePurge(queue, false)
		return err
	})
}

func deleteQueue(url, queue string) {
	_ = withChannel(url, func(ch *amqp.Channel) error {
		_, err := ch.QueueDelete(queue, false, false, false)
		return err
	})
}

func withChannel(url string, f func(*amqp.Channel) error) error {
	conn, err := amqp.Dial(url)
	if err != nil {
		return fmt.Errorf("cannot reach RabbitMQ at %s: %w; `make services` starts it", url, err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	return f(ch)
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
