// Package testenv gives integration tests the local services (RabbitMQ, MariaDB,
// PostgreSQL), fails them with instructions when a service is down, and
// serialises tests that disturb the shared broker.
//
// Tests that only use the broker call Broker(t): they hold a shared lock. Tests
// that disturb it for everyone (close_all_connections, memory alarms, stop_app)
// call Disrupt(t): they hold the lock exclusively, so no other test package in
// this run, nor another go test process on the machine, sees the disturbance.
package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
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
	lock(t, syscall.LOCK_SH)
	reachable(t, "RabbitMQ", "127.0.0.1:5672")
	return AMQPURL
}

// Disrupt is Broker for a test that disturbs the broker for everyone: it holds
// the broker lock exclusively until the test ends.
func Disrupt(t testing.TB) string {
	t.Helper()
	lock(t, syscall.LOCK_EX)
	reachable(t, "RabbitMQ", "127.0.0.1:5672")
	return AMQPURL
}

// MySQL opens the local MariaDB test database, failing the test if it is down.
// It holds a shared database lock until the test ends.
func MySQL(t testing.TB) *sql.DB {
	t.Helper()
	lockFile(t, databaseLockPath, syscall.LOCK_SH)
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
	lockFile(t, databaseLockPath, syscall.LOCK_SH)
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
	lockFile(t, databaseLockPath, syscall.LOCK_EX)
}

func lock(t testing.TB, how int) {
	t.Helper()
	lockFile(t, lockPath, how)
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

// Name returns a name unique to this test run, for queues and exchanges.
func Name(t testing.TB, prefix string) string {
	return fmt.Sprintf("warrenmq-test-%s-%s", prefix, messaging.NewID()[:8])
}
