// Command bench measures this library beside the raw amqp091-go client, in one
// process and one run, on the local broker, and prints one line per scenario:
//
//	scenario msgs seconds msgs/s ratio
//
// where ratio = ours / raw for the same scenario. Runs alternate between raw and
// ours so that a noisy neighbour hurts both alike; read the ratios, not the
// absolute rates. It deletes every queue it declares.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

type settings struct {
	url      string
	size     int
	duration time.Duration
	rounds   int
	window   int
	messages int
}

// measurement is what one run of one side produced.
type measurement struct {
	msgs    int
	elapsed time.Duration
}

func (m *measurement) add(other measurement) {
	m.msgs += other.msgs
	m.elapsed += other.elapsed
}

func (m measurement) rate() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.msgs) / m.elapsed.Seconds()
}

// run is one side of a scenario: it runs once and reports what it did.
type run func(ctx context.Context, queue string) (measurement, error)

type scenario struct {
	name string
	raw  run
	ours []namedRun
}

type namedRun struct {
	name string
	run  run
}

func main() {
	var s settings
	var only string
	flag.StringVar(&s.url, "amqp", envOr("WARRENMQ_AMQP", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ address")
	flag.IntVar(&s.size, "size", 1024, "payload size in bytes")
	flag.DurationVar(&s.duration, "duration", 3*time.Second, "time per publish run")
	flag.IntVar(&s.rounds, "rounds", 2, "alternating rounds per scenario")
	flag.IntVar(&s.window, "window", 1000, "unconfirmed publishes allowed in flight (both sides)")
	flag.IntVar(&s.messages, "messages", 20000, "messages per consume run")
	flag.StringVar(&only, "only", "", "comma-separated scenarios to run (publish, consume); empty runs all")
	flag.Parse()

	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	release, err := shareBroker()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer release()
	if err := bench(context.Background(), s, only); err != nil {
		release()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// shareBroker takes the broker lock the test suite uses, shared, so the bench
// never runs while a fault test closes every connection or raises an alarm.
func shareBroker() (release func(), err error) {
	f, err := os.OpenFile("/tmp/warrenmq-broker-test.lock", os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("open the broker lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("take the broker lock: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

func bench(ctx context.Context, s settings, only string) error {
	scenarios := []scenario{publishScenario(s), consumeScenario(s)}
	fmt.Printf("# payload %d B, window %d, %d rounds alternating raw and ours; ratio = ours / raw\n", s.size, s.window, s.rounds)
	fmt.Printf("%-24s %9s %8s %9s %6s\n", "scenario", "msgs", "seconds", "msgs/s", "ratio")
	for _, sc := range scenarios {
		if only != "" && !strings.Contains(","+only+",", ","+sc.name+",") {
			continue
		}
		if err := runScenario(ctx, s, sc); err != nil {
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

	var raw measurement
	ours := make([]measurement, len(sc.ours))
	for round := range s.rounds {
		sides := append([]namedRun{{"raw", sc.raw}}, sc.ours...)
		if round%2 == 1 { // alternate who goes first
			sides = append(sides[1:], sides[0])
		}
		for _, side := range sides {
			if err := purgeQueue(s.url, queue); err != nil {
				return err
			}
			m, err := side.run(ctx, queue)
			if err != nil {
				return fmt.Errorf("%s: %w", side.name, err)
			}
			if side.name == "raw" {
				raw.add(m)
				continue
			}
			for i := range sc.ours {
				if sc.ours[i].name == side.name {
					ours[i].add(m)
				}
			}
		}
	}
	printRow(sc.name+"/raw", raw, raw)
	for i, o := range sc.ours {
		printRow(sc.name+"/"+o.name, ours[i], raw)
	}
	return nil
}

func printRow(name string, m, raw measurement) {
	ratio := 0.0
	if raw.rate() > 0 {
		ratio = m.rate() / raw.rate()
	}
	fmt.Printf("%-24s %9d %8.2f %9.0f %6.2f\n", name, m.msgs, m.elapsed.Seconds(), m.rate(), ratio)
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
