// Package testenv gives integration tests the local services (RabbitMQ, MariaDB,
// PostgreSQL), fails them with instructions when a service is down, and
// serialises tests that disturb the shared broker.
//
// Tests that only use the broker call Broker(t): they hold a shared lock. Tests
// that disturb it for everyone (close_all_connections, memory alarms, stop_app)
// call Disrupt(t): they hold the lock exclusively, so no other test package in
// this run, nor another go test process on the machine, sees the disturbance.
// The databases have a lock of their own (MySQL, Postgres, DisruptDatabases).
// A test that needs both takes the broker's first: one that asks for the
// broker lock while it (or the test it runs under) holds the database lock
// fails at once, naming both, instead of waiting on a test that waits for it.
package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
)

// Addresses of the local services; each can be overridden by the environment.
var (
	AMQPURL     = env("WARRENMQ_TEST_AMQP", "amqp://guest:guest@127.0.0.1:5672/")
	MySQLDSN    = env("WARRENMQ_TEST_MYSQL", "root@tcp(127.0.0.1:3306)/test?parseTime=true&multiStatements=true")
	PostgresDSN = env("WARRENMQ_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
)

const (
	lockPath         = "/tmp/warrenmq-broker-test.lock"
	databaseLockPath = "/tmp/warrenmq-database-test.lock"
)

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// Broker fails the test unless RabbitMQ answers on AMQPURL, and holds a shared
// broker lock until the test ends.
func Broker(t testing.TB) string {
	t.Helper()
	lock(t, "testenv.Broker", syscall.LOCK_SH)
	reachable(t, "RabbitMQ", "127.0.0.1:5672")
	return AMQPURL
}

// Vhost is Broker with a virtual host of the test's own, deleted when the
// test ends: its queues are shared with no other test package's services
// (the example service, run by several packages at once, consumes the same
// queue names everywhere). It returns the address of that virtual host, with
// the same credentials as AMQPURL.
func Vhost(t testing.TB, prefix string) string {
	t.Helper()
	base := Broker(t)
	name := fmt.Sprintf("warrenmq-test-%s-%s", prefix, messaging.NewID()[:8])
	Rabbitmqctl(t, "add_vhost", name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = exec.CommandContext(ctx, "rabbitmqctl", "delete_vhost", name).Run()
	})
	Rabbitmqctl(t, "set_permissions", "-p", name, "guest", ".*", ".*", ".*")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("testenv: the broker address %q does not parse: %v", base, err)
	}
	u.Path, u.RawPath = "/"+name, ""
	return u.String()
}

// Disrupt is Broker for a test that disturbs the broker for everyone: it holds
// the broker lock exclusively until the test ends.
func Disrupt(t testing.TB) string {
	t.Helper()
	lock(t, "testenv.Disrupt", syscall.LOCK_EX)
	reachable(t, "RabbitMQ", "127.0.0.1:5672")
	return AMQPURL
}

// MySQL opens the local MariaDB test database, failing the test if it is down.
// It holds a shared database lock until the test ends.
func MySQL(t testing.TB) *sql.DB {
	t.Helper()
	lockDatabases(t, "testenv.MySQL", syscall.LOCK_SH)
	return OpenMySQL(t)
}

// OpenMySQL is MySQL without the lock, for a test that already holds
// DisruptDatabases.
func OpenMySQL(t testing.TB) *sql.DB {
	t.Helper()
	reachable(t, "MariaDB", "127.0.0.1:3306")
	return open(t, "mysql", MySQLDSN)
}

// Postgres opens the local PostgreSQL test database, failing the test if it is down.
// It holds a shared database lock until the test ends.
func Postgres(t testing.TB) *sql.DB {
	t.Helper()
	lockDatabases(t, "testenv.Postgres", syscall.LOCK_SH)
	reachable(t, "PostgreSQL", "127.0.0.1:5432")
	return open(t, "pgx", PostgresDSN)
}

func open(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("open %s: %v (is the driver imported by the test?)", driver, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		t.Fatalf("cannot use %s at %s: %v; `make services` starts it", driver, dsn, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func reachable(t testing.TB, name, address string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		t.Fatalf("cannot reach %s at %s: %v; is it running? `make services` starts it", name, address, err)
	}
	_ = conn.Close()
}

// DisruptDatabases holds the database lock exclusively until the test ends, for
// a test that restarts MariaDB or PostgreSQL. Take the broker lock (Broker or
// Disrupt) before it, never after: every test takes the two locks in that
// order, or two test packages can each hold one and wait for the other. Open handles with OpenMySQL, and
// never call MySQL or Postgres in the same test (the shared lock would wait for
// the exclusive one).
func DisruptDatabases(t testing.TB) {
	t.Helper()
	lockDatabases(t, "testenv.DisruptDatabases", syscall.LOCK_EX)
}

// lock takes the broker lock for t, refusing at once when t (or a test it
// runs under) holds the database lock: the documented order is the broker's
// first, and a test that takes them the other way round can wait for ever on
// one held by a test that waits for the other.
func lock(t testing.TB, how string, mode int) {
	t.Helper()
	if err := brokerAfterDatabase(t.Name(), how); err != nil {
		t.Fatal(err)
	}
	lockFile(t, lockPath, mode)
}

// brokerAfterDatabase is the error of a test named name that asks for the
// broker lock with how while it holds the database lock, naming both; nil
// when it holds none.
func brokerAfterDatabase(name, how string) error {
	held, holder, ok := databaseLockOf(name)
	if !ok {
		return nil
	}
	return fmt.Errorf("testenv: %s takes the broker lock (%s) while %s holds the database lock (%s): "+
		"take the broker lock first (testenv.Broker or testenv.Disrupt before testenv.MySQL, testenv.Postgres or testenv.DisruptDatabases)",
		name, how, holder, held)
}

// databaseLocks records which test holds the database lock, and how, so the
// broker lock can be refused to it (see lock).
var databaseLocks = struct {
	sync.Mutex
	by map[string]string // test name: the call that took the lock
}{by: map[string]string{}}

// lockDatabases takes the database lock for t and records it until t ends.
func lockDatabases(t testing.TB, how string, mode int) {
	t.Helper()
	lockFile(t, databaseLockPath, mode)
	name := t.Name()
	databaseLocks.Lock()
	databaseLocks.by[name] = how
	databaseLocks.Unlock()
	t.Cleanup(func() {
		databaseLocks.Lock()
		delete(databaseLocks.by, name)
		databaseLocks.Unlock()
	})
}

// databaseLockOf reports the database lock held by the test named name or
// by one it runs under (a parent of a subtest), and which test holds it.
func databaseLockOf(name string) (how, holder string, ok bool) {
	databaseLocks.Lock()
	defer databaseLocks.Unlock()
	for test := name; ; {
		if how, ok := databaseLocks.by[test]; ok {
			return how, test, true
		}
		slash := strings.LastIndexByte(test, '/')
		if slash < 0 {
			return "", "", false
		}
		test = test[:slash]
	}
}

func lockFile(t testing.TB, path string, how int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("open test lock %s: %v", path, err)
	}
	fd := int(f.Fd()) // read once: the file may be closed below while Flock waits
	done := make(chan error, 1)
	go func() { done <- syscall.Flock(fd, how) }()
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute):
		err = fmt.Errorf("waited 5m for another test that disturbs a shared service (%s)", path)
	}
	if err != nil {
		_ = f.Close()
		t.Fatalf("test lock %s: %v", path, err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(fd, syscall.LOCK_UN)
		_ = f.Close()
	})
}

// Rabbitmqctl runs rabbitmqctl with args (bounded to a minute) and returns its
// output, failing the test when it fails.
func Rabbitmqctl(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "rabbitmqctl", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("rabbitmqctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// BrokerClockLag is how far the default broker's clock runs behind this
// machine's. Erlang follows a step of the system clock slowly (about 10 ms a
// second), so for some minutes after a step the broker stamps what it stores
// (a stream's chunks) earlier than time.Now says; a test that compares the
// two subtracts this.
func BrokerClockLag(t testing.TB) time.Duration {
	t.Helper()
	out := strings.TrimSpace(Rabbitmqctl(t, "eval", "os:system_time(millisecond) - erlang:system_time(millisecond)."))
	ms, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		t.Fatalf("the broker's clock lag: rabbitmqctl answered %q", out)
	}
	return time.Duration(ms) * time.Millisecond
}

// Name returns a name unique to this test run, for queues and exchanges.
func Name(t testing.TB, prefix string) string {
	return fmt.Sprintf("warrenmq-test-%s-%s", prefix, messaging.NewID()[:8])
}
