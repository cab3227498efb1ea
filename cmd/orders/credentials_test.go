package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

// TestMain lets a test run this binary as the service itself: with
// ORDERS_TEST_MAIN=1 it is main(), configured by ORDERS_AMQP, ORDERS_DSN and
// ORDERS_HTTP, so a test sees exactly what the command prints.
func TestMain(m *testing.M) {
	if os.Getenv("ORDERS_TEST_MAIN") == "1" {
		os.Args = os.Args[:1]
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is the service running as its own process.
type child struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan error
}

func startChild(t *testing.T, amqpURL, dsn string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0]), done: make(chan error, 1)}
	c.cmd.Env = append(os.Environ(), "ORDERS_TEST_MAIN=1", "ORDERS_AMQP="+amqpURL, "ORDERS_DSN="+dsn, "ORDERS_HTTP=127.0.0.1:0")
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var copying sync.WaitGroup
	for _, pipe := range []struct {
		from io.Reader
		to   *bytes.Buffer
	}{{stdout, &c.stdout}, {stderr, &c.stderr}} {
		copying.Add(1)
		go func() {
			defer copying.Done()
			scanner := bufio.NewScanner(pipe.from)
			scanner.Buffer(make([]byte, 64<<10), 1<<20)
			for scanner.Scan() {
				c.mu.Lock()
				pipe.to.Write(scanner.Bytes())
				pipe.to.WriteByte('\n')
				c.mu.Unlock()
			}
		}()
	}
	go func() {
		copying.Wait()
		c.done <- c.cmd.Wait()
	}()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
		}
	})
	return c
}

func (c *child) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stdout.String() + c.stderr.String()
}

// wait returns the exit code, failing the test after bound.
func (c *child) wait(t *testing.T, bound time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
		return c.cmd.ProcessState.ExitCode()
	case <-time.After(bound):
		_ = c.cmd.Process.Kill()
		t.Fatalf("the service did not exit within %s; it printed:\n%s", bound, c.output())
		return -1
	}
}

// waitFor waits (bounded) until the output matches pattern and returns the match.
func (c *child) waitFor(t *testing.T, pattern *regexp.Regexp, bound time.Duration) []string {
	t.Helper()
	var match []string
	eventually(t, bound, fmt.Sprintf("the service to print %s", pattern), func() (bool, string) {
		output := c.output()
		match = pattern.FindStringSubmatch(output)
		return match != nil, "it printed:\n" + output
	})
	return match
}

// TestAPermanentFaultAtStartStopsTheServiceWithoutPrintingThePassword: each
// fault that no retry fixes ends the process non-zero with what is wrong and
// what to do, and no piece of a password holding '#', '@' and ':'.
func TestAPermanentFaultAtStartStopsTheServiceWithoutPrintingThePassword(t *testing.T) {
	testenv.Broker(t)
	testenv.MySQL(t)
	goodAMQP, goodDSN := "amqp://guest:guest@127.0.0.1:5672/", testenv.MySQLDSN
	for _, c := range []struct {
		name, amqp, dsn, says string
	}{
		{"an AMQP password with an unencoded #", "amqp://guest:" + secretPassword + "@127.0.0.1:5672/", goodDSN, "is malformed"},
		{"wrong AMQP credentials", "amqp://guest:" + secretEncoded + "@127.0.0.1:5672/", goodDSN, "user name, password or vhost"},
		{"a missing vhost", "amqp://guest:guest@127.0.0.1:5672/" + testenv.Name(t, "no-vhost"), goodDSN, "create the vhost"},
		{"an unreachable broker", "amqp://guest:" + secretEncoded + "@127.0.0.1:1/", goodDSN, "cannot reach RabbitMQ"},
		{"a DSN that does not parse", goodAMQP, "root:" + secretPassword + "@tcp(127.0.0.1:3306/test", "does not parse"},
		{"wrong database credentials", goodAMQP, "root:" + secretPassword + "@tcp(127.0.0.1:3306)/test", "user name or password in -dsn"},
	} {
		t.Run(c.name, func(t *testing.T) {
			service := startChild(t, c.amqp, c.dsn)
			code := service.wait(t, 30*time.Second)
			output := service.output()
			if code == 0 {
				t.Errorf("exit code 0; want non-zero. Output:\n%s", output)
			}
			if !strings.Contains(output, c.says) {
				t.Errorf("the message does not say %q:\n%s", c.says, output)
			}
			assertNoSecret(t, "the output", output)
		})
	}
}

// TestARunningServicePrintsNoPassword runs the service with a RabbitMQ user and
// a MariaDB user whose password holds '#', '@' and ':', drives its HTTP API,
// severs its broker connections so it logs reconnects, and stops it: no piece
// of the password appears on stdout, stderr or in any HTTP body.
func TestARunningServicePrintsNoPassword(t *testing.T) {
	testenv.Broker(t)
	root := testenv.MySQL(t)
	user := strings.ReplaceAll(testenv.Name(t, "orders"), "-", "_")[len("warrenmq_test_"):]
	testenv.Rabbitmqctl(t, "add_user", user, secretPassword)
	t.Cleanup(func() { testenv.Rabbitmqctl(t, "delete_user", user) })
	testenv.Rabbitmqctl(t, "set_permissions", "-p", "/", user, ".*", ".*", ".*")
	for _, statement := range []string{
		"CREATE USER '" + user + "'@'127.0.0.1' IDENTIFIED BY '" + secretPassword + "'",
		"GRANT ALL ON test.* TO '" + user + "'@'127.0.0.1'",
	} {
		if _, err := root.Exec(statement); err != nil {
			t.Fatalf("%s: %v", statement, err)
		}
	}
	t.Cleanup(func() { _, _ = root.Exec("DROP USER '" + user + "'@'127.0.0.1'") })

	service := startChild(t,
		"amqp://"+user+":"+secretEncoded+"@127.0.0.1:5672/",
		user+":"+secretPassword+"@tcp(127.0.0.1:3306)/test?parseTime=true")
	address := service.waitFor(t, regexp.MustCompile(`http=http://(127\.0\.0\.1:\d+)`), 30*time.Second)[1]
	base := "http://" + address
	client := &http.Client{Timeout: 10 * time.Second}
	var bodies strings.Builder
	record := func(reply response) response { bodies.WriteString(reply.body); return reply }

	if reply := record(get(t, client, base+"/status")); reply.code != http.StatusOK {
		t.Fatalf("/status: %d %s", reply.code, reply.body)
	}
	placed := record(post(t, client, base, `{"item":"book","quantity":1}`, messaging.NewID()))
	if placed.code != http.StatusCreated {
		t.Fatalf("POST /orders: %d %s", placed.code, placed.body)
	}
	record(get(t, client, base+"/orders/"+placed.view(t).ID))
	record(get(t, client, base+"/metrics"))

	// Sever this user's connections: the consumer and the outbox log their
	// reconnects, which quote the address.
	logged := len(service.output())
	closed := 0
	for _, line := range strings.Split(testenv.Rabbitmqctl(t, "list_connections", "user", "pid", "--silent"), "\n") {
		if fields := strings.Fields(line); len(fields) == 2 && fields[0] == user {
			testenv.Rabbitmqctl(t, "close_connection", fields[1], "test: reconnect")
			closed++
		}
	}
	if closed == 0 {
		t.Fatal("found no connection of the service's user to sever")
	}
	eventually(t, 20*time.Second, fmt.Sprintf("the service to log its reconnect after its %d connections were severed", closed),
		func() (bool, string) { return len(service.output()) > logged, "it logged nothing more" })
	eventually(t, 20*time.Second, "/status to answer 200 once the service reconnected", func() (bool, string) {
		code := record(get(t, client, base+"/status")).code
		return code == http.StatusOK, fmt.Sprintf("/status answered %d", code)
	})

	if err := service.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := service.wait(t, 30*time.Second); code != 0 {
		t.Errorf("the service exited %d after SIGTERM:\n%s", code, service.output())
	}
	output := service.output()
	if !strings.Contains(output, user+":xxxxx@127.0.0.1:5672") {
		t.Errorf("the log should show the address, redacted:\n%s", output)
	}
	assertNoSecret(t, "the output", output)
	assertNoSecret(t, "the HTTP bodies", bodies.String())
	t.Logf("%d severed connections; %d bytes of output and %d bytes of HTTP bodies, no password", closed, len(output), bodies.Len())
}
