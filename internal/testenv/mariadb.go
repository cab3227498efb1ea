package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"
)

// StopMariaDB stops the local MariaDB server and waits (at most a minute)
// until it has exited. The caller holds DisruptDatabases and arranges for
// StartMariaDB to run when the test ends, whatever happens. It takes no
// testing.T so that a background disruptor may call it.
func StopMariaDB() error {
	return command("start-stop-daemon", "--stop", "--oknodo", "--exec", "/usr/sbin/mariadbd", "--retry", "30")
}

// StartMariaDB starts the local MariaDB server when it is down and waits (at
// most a minute) until it answers a ping.
func StartMariaDB() error {
	if err := command("sh", "-c", "mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld"); err != nil {
		return err
	}
	if err := command("start-stop-daemon", "--start", "--oknodo", "--background", "--exec", "/usr/sbin/mariadbd"); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for !MariaDBAnswers() {
		if time.Now().After(deadline) {
			return fmt.Errorf("MariaDB did not answer within a minute of starting; `make services` starts it")
		}
		time.Sleep(200 * time.Millisecond) // polling a starting server
	}
	return nil
}

// MariaDBAnswers reports whether the local MariaDB accepts a connection and
// answers a ping within a few seconds.
func MariaDBAnswers() bool {
	conn, err := net.DialTimeout("tcp", "127.0.0.1:3306", time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	db, err := sql.Open("mysql", MySQLDSN)
	if err != nil {
		return false
	}
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return db.PingContext(ctx) == nil
}

func command(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
