// Command peers runs the publish, consume and outbox scenarios of `make bench`
// through watermill beside this library and the raw amqp091-go client, in one
// process and one run, on the local broker and MariaDB, and prints one table:
//
//	scenario msgs seconds msgs/s ratio spread
//
// where ratio is the median, over alternating rounds, of a side's rate divided
// by its scenario's baseline (the first side) in the same round, and spread the
// lowest and highest of those per-round ratios. A last line per scenario says
// whether ours is ahead of watermill. It is a module of its own so that the
// library's go.mod never depends on watermill; it benchmarks the library in
// this checkout (see the replace directive). Every queue it declares and every
// table it creates is removed at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

type settings struct {
	url      string
	dsn      string
	size     int
	rounds   int
	window   int
	publish  int
	consume  int
	outbox   int
	sideTime time.Duration
}

// result is what one run of one side did: how many messages, in how long.
type result struct {
	msgs    int
	elapsed time.Duration
}

func (r result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.msgs) / r.elapsed.Seconds()
}

// role tells which row a side is, for the scenario's last line.
type role int

const (
	isBaseline role = iota
	isOurs
	isWatermill
)

// side is one way of doing what its scenario measures. run gets a context that
// ends after settings.sideTime and a durable queue emptied for it.
type side struct {
	name string
	role role
	run  func(ctx context.Context, queue string) (result, error)
}

// scenario is sides measured on one queue; the first side is the baseline.
// setup, when set, prepares what the sides share beyond the queue (tables) and
// returns how to remove it.
type scenario struct {
	name  string
	sides []side
	setup func(ctx context.Context) (cleanup func(), err error)
}

func main() {
	var s settings
	flag.StringVar(&s.url, "amqp", envOr("WARRENMQ_AMQP", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ address")
	flag.StringVar(&s.dsn, "dsn", envOr("WARRENMQ_MYSQL", "root@tcp(127.0.0.1:3306)/test?parseTime=true"), "MariaDB/MySQL data source for the outbox scenario")
	flag.IntVar(&s.size, "size", 1024, "payload bytes")
	flag.IntVar(&s.rounds, "rounds", 3, "alternating rounds per scenario; the ratio is the median of the rounds' ratios")
	flag.IntVar(&s.window, "window", 1000, "unconfirmed publishes in flight (raw and ours) and every consumer's prefetch")
	flag.IntVar(&s.publish, "publish", 5000, "messages per publish run")
	flag.IntVar(&s.consume, "consume", 20000, "messages per consume run")
	flag.IntVar(&s.outbox, "outbox", 5000, "messages per outbox run, committed 100 per transaction")
	flag.DurationVar(&s.sideTime, "limit", 2*time.Minute, "longest one run of one side may take")
	only := flag.String("only", "", "comma-separated scenarios to run (publish, consume, outbox); empty runs all")
	flag.Parse()

	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, s, *only)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, s settings, only string) error {
	if s.rounds < 1 || s.window < 1 || s.publish < 100 || s.consume < 1 || s.outbox < 100 {
		return errors.New("-rounds, -window and -consume must be positive, -publish and -outbox at least 100")
	}
	// Hold the test suite's broker lock shared, so no fault test closes every
	// connection under the bench.
	release, err := shareLock(ctx, brokerLockPath)
	if err != nil {
		return err
	}
	defer release()
	fmt.Printf("# payload %d B, window %d, %d rounds alternating the order of the sides; ratio = median over rounds of side / first side in the same round, spread = lowest-highest\n",
		s.size, s.window, s.rounds)
	fmt.Printf("%-24s %9s %8s %9s %6s %11s\n", "scenario", "msgs", "seconds", "msgs/s", "ratio", "spread")
	for _, sc := range []scenario{publishScenario(s), consumeScenario(s), outboxScenario(s)} {
		if only != "" && !slices.Contains(strings.Split(only, ","), sc.name) {
			continue
		}
		if err := runScenario(ctx, s, sc); err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
	}
	return nil
}

func runScenario(ctx context.Context, s settings, sc scenario) error {
	queue := "warrenmq-peers-" + messaging.NewID()[:8]
	if err := onChannel(s.url, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(queue, true, false, false, false, nil)
		return err
	}); err != nil {
		return fmt.Errorf("declare the bench queue: %w", err)
	}
	defer func() {
		_ = onChannel(s.url, func(ch *amqp.Channel) error {
			_, err := ch.QueueDelete(queue, false, false, false)
			return err
		})
	}()
	if sc.setup != nil {
		cleanup, err := sc.setup(ctx)
		if err != nil {
			return err
		}
		defer cleanup()
	}

	rounds := make([][]result, len(sc.sides))
	order := make([]int, len(sc.sides))
	for i := range order {
		order[i] = i
	}
	for range s.rounds {
		for _, i := range order {
			if err := onChannel(s.url, func(ch *amqp.Channel) error {
				_, err := ch.QueuePurge(queue, false)
				return err
			}); err != nil {
				return fmt.Errorf("purge the bench queue: %w", err)
			}
			sideCtx, cancel := context.WithTimeout(ctx, s.sideTime)
			r, err := sc.sides[i].run(sideCtx, queue)
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %w", sc.sides[i].name, err)
			}
			rounds[i] = append(rounds[i], r)
		}
		slices.Reverse(order) // a noisy neighbour weighs on every side alike
	}
	for i, sd := range sc.sides {
		printRow(sc.name+"/"+sd.name, rounds[i], ratios(rounds[i], rounds[0]))
	}
	printVerdict(sc, rounds)
	return nil
}

// printVerdict prints whether ours is ahead of the fastest watermill side,
// from the per-round ratios of the two.
func printVerdict(sc scenario, rounds [][]result) {
	mine, best := -1, -1
	for i, sd := range sc.sides {
		switch {
		case sd.role == isOurs:
			mine = i
		case sd.role == isWatermill && (best < 0 || total(rounds[i]).rate() > total(rounds[best]).rate()):
			best = i
		}
	}
	if mine < 0 || best < 0 {
		return
	}
	r := ratios(rounds[mine], rounds[best])
	verdict := "ahead of"
	if median(r) < 1 {
		verdict = "behind"
	}
	fmt.Printf("# %s: ours (%s) is %s watermill (%s): %.2fx, spread %s\n",
		sc.name, sc.sides[mine].name, verdict, sc.sides[best].name, median(r), spread(r))
}

func total(rs []result) result {
	var t result
	for _, r := range rs {
		t.msgs += r.msgs
		t.elapsed += r.elapsed
	}
	return t
}

// ratios is each round's rate over the other side's rate in the same round,
// sorted: a noisy neighbour in one round moves one ratio, not the median.
func ratios(side, other []result) []float64 {
	out := make([]float64, 0, len(side))
	for i := range min(len(side), len(other)) {
		if other[i].rate() > 0 {
			out = append(out, side[i].rate()/other[i].rate())
		}
	}
	slices.Sort(out)
	return out
}

func median(sorted []float64) float64 {
	switch n := len(sorted); {
	case n == 0:
		return 0
	case n%2 == 1:
		return sorted[n/2]
	default:
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
}

func spread(sorted []float64) string {
	if len(sorted) < 2 {
		return "-"
	}
	return fmt.Sprintf("%.2f-%.2f", sorted[0], sorted[len(sorted)-1])
}

// printRow prints the side's totals over its rounds, the median of its
// per-round ratios and their spread, in the columns of `make bench`.
func printRow(name string, rounds []result, r []float64) {
	t := total(rounds)
	fmt.Printf("%-24s %9d %8.2f %9.0f %6.2f %11s\n", name, t.msgs, t.elapsed.Seconds(), t.rate(), median(r), spread(r))
}

// onChannel runs f on a channel of a connection of its own, closed after.
func onChannel(url string, f func(*amqp.Channel) error) error {
	conn, ch, err := open(url, false)
	if err != nil {
		return err
	}
	defer conn.Close()
	return f(ch)
}

// open dials the broker and opens one channel, in confirm mode when confirm
// is set. Closing the connection closes the channel.
func open(url string, confirm bool) (*amqp.Connection, *amqp.Channel, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach RabbitMQ: %w; `make services` starts it", err)
	}
	ch, err := conn.Channel()
	if err == nil && confirm {
		err = ch.Confirm(false)
	}
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("open a channel: %w", err)
	}
	return conn, ch, nil
}

const (
	brokerLockPath   = "/tmp/warrenmq-broker-test.lock"
	databaseLockPath = "/tmp/warrenmq-database-test.lock"
)

// shareLock takes one of the test suite's locks shared, waiting at most five
// minutes for a test holding it exclusively (a fault test restarting a
// service) to end.
func shareLock(ctx context.Context, path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("open the test lock %s: %w", path, err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) || ctx.Err() != nil {
			_ = f.Close()
			return nil, fmt.Errorf("take the test lock %s (a fault test holds it; wait for it to end): %w", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
