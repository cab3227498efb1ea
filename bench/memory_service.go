package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

// The example service's queue for order-placed and its prefetch there.
const (
	serviceQueue    = "orders.ship"
	servicePrefetch = 64
	// serviceLimit bounds each wait on the service: start, deliveries, drain.
	serviceLimit = 2 * time.Minute
)

// serviceSample is one reading of the service's memory: VmRSS from
// /proc/PID/status and the Go heap from its /metrics.
type serviceSample struct {
	rss, heapInUse, heapAlloc float64
}

// measureService runs the example service in a virtual host and a database
// of its own, and prints its memory at rest, with memoryBacklog order-placed
// messages queued while its handlers wait on a table lock, while it drains
// them, and after.
func measureService(ctx context.Context, s settings) error {
	release, err := shareLock(databaseLockPath)
	if err != nil {
		return err
	}
	defer release()
	env, err := newServiceEnv(ctx, s)
	if err != nil {
		return err
	}
	defer env.remove()
	svc, err := startService(ctx, env)
	if err != nil {
		return err
	}
	defer svc.stop()

	if err := pause(ctx, 2*time.Second); err != nil { // let start-up garbage go
		return err
	}
	rest, err := svc.sampleMedian(ctx, 5)
	if err != nil {
		return err
	}
	ids, err := placeOrders(ctx, env.db, memoryBacklog)
	if err != nil {
		return err
	}
	unlock, err := lockOrders(ctx, env.db)
	if err != nil {
		return err
	}
	defer unlock()
	if err := publishPlaced(ctx, env.amqp, ids); err != nil {
		return err
	}
	inFlight, err := waitHeld(ctx, env.amqp, memoryBacklog)
	if err != nil {
		return err
	}
	backlog, err := svc.sampleMedian(ctx, 5)
	if err != nil {
		return err
	}
	started := time.Now()
	unlock()
	peak, err := svc.peakUntil(ctx, func() (bool, error) { return recorded(ctx, env.db, memoryBacklog) })
	if err != nil {
		return err
	}
	drained := time.Since(started)
	after, err := svc.sampleMedian(ctx, 5)
	if err != nil {
		return err
	}
	printServiceMemory(rest, backlog, peak, after, inFlight, drained)
	return nil
}

func printServiceMemory(rest, backlog, peak, after serviceSample, inFlight int, drained time.Duration) {
	line := func(what string, m serviceSample) {
		fmt.Printf("# memory orders %-32s RSS %s, heap in use %s, heap allocated %s\n", what+":", mib(m.rss), mib(m.heapInUse), mib(m.heapAlloc))
	}
	line("at rest", rest)
	line(fmt.Sprintf("backlog %d, %d in flight", memoryBacklog, inFlight), backlog)
	line("draining it (peak)", peak)
	line("after it drained", after)
	fmt.Printf("# memory orders: the backlog added %s RSS and %s heap in use with %d messages in flight (prefetch %d; the rest waits in the broker); drained %d orders end to end in %s (%.0f orders/s)\n",
		mib(backlog.rss-rest.rss), mib(backlog.heapInUse-rest.heapInUse), inFlight, servicePrefetch,
		memoryBacklog, drained.Round(time.Millisecond), float64(memoryBacklog)/drained.Seconds())
	verdict := "meets"
	if max(backlog.rss, peak.rss) > memoryTarget {
		verdict = "misses"
	}
	fmt.Printf("# memory orders: target at most %s RSS with the backlog: %s it (highest %s)\n", mib(memoryTarget), verdict, mib(max(backlog.rss, peak.rss)))
}

// serviceEnv is what the service runs in: a virtual host and a database made
// for this run, so its fixed queue and table names meet no other copy of it.
type serviceEnv struct {
	vhost, database string
	amqp, dsn       string
	db              *sql.DB
	dir             string
}

func newServiceEnv(ctx context.Context, s settings) (*serviceEnv, error) {
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	env := &serviceEnv{vhost: "warrenmq-bench-" + suffix, database: "warrenmq_bench_" + suffix}
	dir, err := os.MkdirTemp("", "warrenmq-bench-")
	if err != nil {
		return nil, fmt.Errorf("make a directory for the service: %w", err)
	}
	env.dir = dir
	if err := env.make(ctx, s); err != nil {
		env.remove()
		return nil, err
	}
	return env, nil
}

func (env *serviceEnv) make(ctx context.Context, s settings) error {
	for _, args := range [][]string{
		{"add_vhost", env.vhost},
		{"set_permissions", "-p", env.vhost, "guest", ".*", ".*", ".*"},
	} {
		if err := rabbitmqctl(ctx, args...); err != nil {
			return err
		}
	}
	u, err := url.Parse(s.url)
	if err != nil {
		return fmt.Errorf("the -amqp address does not parse: %w", err)
	}
	u.Path, u.RawPath = "/"+env.vhost, ""
	env.amqp = u.String()
	cfg, err := mysql.ParseDSN(s.dsn)
	if err != nil {
		return fmt.Errorf("the -dsn data source does not parse: %w", err)
	}
	admin, err := openDatabase(ctx, s.dsn)
	if err != nil {
		return err
	}
	_, err = admin.ExecContext(ctx, "CREATE DATABASE "+env.database)
	_ = admin.Close()
	if err != nil {
		return fmt.Errorf("create database %s (does the -dsn user have CREATE rights?): %w", env.database, err)
	}
	cfg.DBName = env.database
	env.dsn = cfg.FormatDSN()
	env.db, err = openDatabase(ctx, env.dsn)
	return err
}

// remove drops what make made; each step is bounded and runs even if an
// earlier one failed.
func (env *serviceEnv) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if env.db != nil {
		_, _ = env.db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+env.database)
		_ = env.db.Close()
	}
	if env.amqp != "" {
		_ = rabbitmqctl(ctx, "delete_vhost", env.vhost)
	}
	_ = os.RemoveAll(env.dir)
}

func rabbitmqctl(ctx context.Context, args ...string) error {
	bounded, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(bounded, "rabbitmqctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("rabbitmqctl %s (the memory scenario makes a virtual host of its own): %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// runningService is the example service as a child process.
type runningService struct {
	cmd     *exec.Cmd
	base    string
	exited  chan struct{}
	logs    *tailBuffer
	stopped sync.Once
}

// startService builds cmd/orders and runs it until it answers /status.
func startService(ctx context.Context, env *serviceEnv) (*runningService, error) {
	binary := filepath.Join(env.dir, "orders")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "github.com/warrenmq/messaging/cmd/orders")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the example service (run the bench from the module): %w\n%s", err, out)
	}
	address, err := freeAddress()
	if err != nil {
		return nil, err
	}
	logs := &tailBuffer{limit: 64 << 10}
	cmd := exec.Command(binary, "-amqp", env.amqp, "-dsn", env.dsn, "-http", address)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the example service: %w", err)
	}
	svc := &runningService{cmd: cmd, base: "http://" + address, exited: make(chan struct{}), logs: logs}
	go func() { _ = cmd.Wait(); close(svc.exited) }()
	if err := svc.waitServing(ctx); err != nil {
		svc.stop()
		return nil, err
	}
	return svc, nil
}

// freeAddress is a loopback address with a port nothing listens on now.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port for the service: %w", err)
	}
	address := l.Addr().String()
	_ = l.Close()
	return address, nil
}

func (svc *runningService) waitServing(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(serviceLimit)
	for {
		response, err := client.Get(svc.base + "/status")
		if err == nil {
			_ = response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-svc.exited:
			return fmt.Errorf("the example service stopped before serving:\n%s", svc.logs)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the example service was not healthy within %s:\n%s", serviceLimit, svc.logs)
		}
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// stop sends SIGTERM and waits for the service to end (killing its process
// group after 15 s).
func (svc *runningService) stop() {
	svc.stopped.Do(func() {
		_ = svc.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(15 * time.Second)
		defer timer.Stop()
		select {
		case <-svc.exited:
		case <-timer.C:
			_ = syscall.Kill(-svc.cmd.Process.Pid, syscall.SIGKILL)
			<-svc.exited
		}
	})
}

// sample reads the service's resident memory and Go heap once.
func (svc *runningService) sample(ctx context.Context) (serviceSample, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", svc.cmd.Process.Pid))
	if err != nil {
		return serviceSample{}, fmt.Errorf("read the service's memory (Linux /proc): %w", err)
	}
	var m serviceSample
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			m.rss = kib * 1024
		}
	}
	metrics, err := svc.metrics(ctx)
	if err != nil {
		return m, err
	}
	m.heapInUse, m.heapAlloc = metrics["go_memstats_heap_inuse_bytes"], metrics["go_memstats_heap_alloc_bytes"]
	return m, nil
}

// metrics reads the unlabelled samples of the service's /metrics.
func (svc *runningService) metrics(ctx context.Context) (map[string]float64, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, svc.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	response, err := client.Do(request)
	if err != nil {
		return nil, fmt.Errorf("read the service's /metrics: %w", err)
	}
	defer response.Body.Close()
	values := map[string]float64{}
	scanner := bufio.NewScanner(response.Body)
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) != 2 || strings.HasPrefix(fields[0], "#") || strings.Contains(fields[0], "{") {
			continue
		}
		if v, err := strconv.ParseFloat(fields[1], 64); err == nil {
			values[fields[0]] = v
		}
	}
	return values, scanner.Err()
}

// sampleMedian is the median of n samples, 200 ms apart, field by field.
func (svc *runningService) sampleMedian(ctx context.Context, n int) (serviceSample, error) {
	var rss, inUse, alloc []float64
	for i := range n {
		if i > 0 {
			if err := pause(ctx, 200*time.Millisecond); err != nil {
				return serviceSample{}, err
			}
		}
		m, err := svc.sample(ctx)
		if err != nil {
			return serviceSample{}, err
		}
		rss, inUse, alloc = append(rss, m.rss), append(inUse, m.heapInUse), append(alloc, m.heapAlloc)
	}
	return serviceSample{rss: median(rss), heapInUse: median(inUse), heapAlloc: median(alloc)}, nil
}

// peakUntil samples every 100 ms until done says so, and returns the highest
// reading of each field.
func (svc *runningService) peakUntil(ctx context.Context, done func() (bool, error)) (serviceSample, error) {
	var peak serviceSample
	deadline := time.Now().Add(serviceLimit)
	for {
		m, err := svc.sample(ctx)
		if err != nil {
			return peak, err
		}
		peak = serviceSample{rss: max(peak.rss, m.rss), heapInUse: max(peak.heapInUse, m.heapInUse), heapAlloc: max(peak.heapAlloc, m.heapAlloc)}
		finished, err := done()
		if err != nil || finished {
			return peak, err
		}
		if time.Now().After(deadline) {
			return peak, fmt.Errorf("the example service did not drain its backlog within %s:\n%s", serviceLimit, svc.logs)
		}
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			return peak, err
		}
	}
}

// placeOrders inserts n placed orders, as the API would have, and returns
// their ids.
func placeOrders(ctx context.Context, db *sql.DB, n int) ([]string, error) {
	const perStatement = 500
	ids := make([]string, n)
	now := time.Now().UTC()
	for start := 0; start < n; start += perStatement {
		end := min(start+perStatement, n)
		var query strings.Builder
		query.WriteString("INSERT INTO orders (id, item, quantity, status, placed_at) VALUES ")
		args := make([]any, 0, 3*(end-start))
		for i := start; i < end; i++ {
			ids[i] = messaging.NewID()
			if i > start {
				query.WriteString(", ")
			}
			query.WriteString("(?, 'book', 1, 'placed', ?)")
			args = append(args, ids[i], now)
		}
		if _, err := db.ExecContext(ctx, query.String(), args...); err != nil {
			return nil, fmt.Errorf("place the bench's orders: %w", err)
		}
	}
	return ids, nil
}

// lockOrders holds a write lock on the orders table, so the service's
// handlers wait on their first UPDATE with their deliveries in flight; the
// function it returns releases it (once).
func lockOrders(ctx context.Context, db *sql.DB) (func(), error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("hold the orders table: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "LOCK TABLES orders WRITE"); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("lock the orders table: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unlockCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = conn.ExecContext(unlockCtx, "UNLOCK TABLES")
			_ = conn.Close()
		})
	}, nil
}

// publishPlaced publishes one order-placed message per id to the service's
// queue, with the envelope our transport writes, confirmed.
func publishPlaced(ctx context.Context, address string, ids []string) error {
	conn, err := amqp.Dial(address)
	if err != nil {
		return fmt.Errorf("publish the backlog: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("publish the backlog: channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("publish the backlog: confirm mode: %w", err)
	}
	pending := make([]*amqp.DeferredConfirmation, 0, len(ids))
	for _, id := range ids {
		body, _ := json.Marshal(map[string]any{"order_id": id, "item": "book", "quantity": 1})
		publishing := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/json", Type: "order-placed", Body: body}
		addEnvelope(&publishing, messaging.NewID(), "order-placed")
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", serviceQueue, true, false, publishing)
		if err != nil {
			return fmt.Errorf("publish the backlog: %w", err)
		}
		pending = append(pending, c)
	}
	for _, c := range pending {
		if err := waitConfirm(ctx, c); err != nil {
			return fmt.Errorf("publish the backlog: %w", err)
		}
	}
	return nil
}

// waitHeld waits until the ready count of the service's queue stops falling
// below total (the consumer took its prefetch), and returns how many
// messages the service holds.
func waitHeld(ctx context.Context, address string, total int) (int, error) {
	var seen []int
	// A second of readings (20 ms apart) that agree, below the total: settled.
	const settled = 50
	ready, err := pollQueue(ctx, address, serviceQueue, serviceLimit, func(ready int) bool {
		seen = append(seen, ready)
		n := len(seen)
		return n >= settled && ready < total && slices.Min(seen[n-settled:]) == slices.Max(seen[n-settled:])
	})
	if err != nil {
		return 0, fmt.Errorf("the service's queue did not settle below %d: %w", total, err)
	}
	return total - ready, nil
}

// recorded reports whether the service recorded want order-shipped events:
// every order shipped, announced through the outbox and logged.
func recorded(ctx context.Context, db *sql.DB, want int) (bool, error) {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM order_events").Scan(&n); err != nil {
		return false, fmt.Errorf("count the service's events: %w", err)
	}
	return n >= want, nil
}

// tailBuffer keeps the last limit bytes written to it, for a failure's message.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.limit; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
