package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging/internal/testenv"
)

// ordersService is the example service running as its own process.
type ordersService struct {
	base string // http://127.0.0.1:PORT
}

var servingLine = regexp.MustCompile(`orders: serving.* http=(http://[^ ]+)`)

// startOrders builds cmd/orders and runs it against the local services
// until the test ends (SIGTERM, then kill after 15 s).
func startOrders(t *testing.T, amqpURL, dsn string) ordersService {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "orders")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := exec.Command(goTool, "build", "-o", bin, "github.com/warrenmq/messaging/cmd/orders")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example service: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-amqp", amqpURL, "-dsn", dsn, "-http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	address := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stderr)
		scanner.Buffer(make([]byte, 64<<10), 1<<20)
		for scanner.Scan() {
			if m := servingLine.FindStringSubmatch(scanner.Text()); m != nil {
				select {
				case address <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case base := <-address:
		return ordersService{base: base}
	case <-exited:
		t.Fatal("the example service stopped before serving")
	case <-time.After(60 * time.Second):
		t.Fatal("the example service did not serve within 60s")
	}
	return ordersService{}
}

// place places count orders of item and returns their ids.
func (s ordersService) place(t *testing.T, item string, count int) []string {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	ids := make([]string, 0, count)
	for range count {
		response, err := client.Post(s.base+"/orders", "application/json", strings.NewReader(fmt.Sprintf(`{"item":%q,"quantity":1}`, item)))
		if err != nil {
			t.Fatal(err)
		}
		var order struct{ ID, Status string }
		_ = json.NewDecoder(response.Body).Decode(&order)
		_ = response.Body.Close()
		if response.StatusCode != http.StatusCreated || order.ID == "" {
			t.Fatalf("POST /orders: %d %+v", response.StatusCode, order)
		}
		ids = append(ids, order.ID)
	}
	return ids
}

// status is an order's status as the service reports it.
func (s ordersService) status(t *testing.T, id string) string {
	t.Helper()
	response, err := (&http.Client{Timeout: 10 * time.Second}).Get(s.base + "/orders/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	var order struct{ Status string }
	_ = json.NewDecoder(response.Body).Decode(&order)
	return order.Status
}

// waitShipped waits until every order is shipped.
func (s ordersService) waitShipped(t *testing.T, ids []string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, id := range ids {
		// The service ships on its own time and tells no event of it.
		if !testenv.Poll(time.Until(deadline), func() bool { return s.status(t, id) == "shipped" }) {
			t.Fatalf("order %s is %q after %s, want shipped", id, s.status(t, id), within)
		}
	}
}

// word is n letters from g to z: a token that folding keeps as it is
// (neither a number nor hex).
func word(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('g' + rand.IntN(20))
	}
	return string(b)
}

// refuseShipping makes the example's database refuse to ship orders of the
// two items, each with its own reason, until the returned fix is called (it
// is also called when the test ends). Only orders of these items are
// touched, so other tests sharing the database are not.
func refuseShipping(t *testing.T, db *sql.DB, token, itemA, itemB, reasonA, reasonB string) (fix func()) {
	t.Helper()
	trigger := "warrenmq_console_" + token
	ddl := fmt.Sprintf(`CREATE TRIGGER %s BEFORE UPDATE ON orders FOR EACH ROW BEGIN
		IF NEW.status = 'shipped' AND NEW.item = '%s' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '%s';
		ELSEIF NEW.status = 'shipped' AND NEW.item = '%s' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '%s';
		END IF; END`, trigger, itemA, reasonA, itemB, reasonB)
	if _, err := db.Exec(ddl); err != nil {
		t.Fatalf("create the trigger that refuses shipping: %v", err)
	}
	fix = func() {
		if _, err := db.Exec("DROP TRIGGER IF EXISTS " + trigger); err != nil {
			t.Errorf("drop the trigger %s: %v", trigger, err)
		}
	}
	t.Cleanup(fix)
	return fix
}

// publishScript publishes an order-placed whose body is a script to the
// example's queue: it cannot be decoded, so the service parks it.
func publishScript(t *testing.T, amqpURL, queue, id string) {
	t.Helper()
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	confirm, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
		MessageId: id, Type: "order-placed", ContentType: "application/json", DeliveryMode: amqp.Persistent,
		Body: []byte("<script>alert(1)</script>"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := confirm.WaitContext(ctx); !ok || err != nil {
		t.Fatalf("the script message was not confirmed: %v", err)
	}
}

// startConsole runs `warrenmq console` with args until the test ends and
// returns the address it printed.
func startConsole(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reader, writer := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"console"}, args...), writer, os.Stderr)
		_ = writer.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the console stopped with: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("the console did not stop within 20s")
		}
	})
	lines := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(reader)
		for scanner.Scan() {
			select {
			case lines <- scanner.Text():
			default:
			}
		}
	}()
	select {
	case line := <-lines:
		address, ok := strings.CutPrefix(strings.Fields(line)[2], "http://")
		if !ok {
			t.Fatalf("the console printed %q", line)
		}
		return "http://" + address
	case err := <-done:
		t.Fatalf("the console stopped before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the console did not say where it serves within 30s")
	}
	return ""
}

// discardOurs takes from queue the messages this test set aside (their
// reason, id or body holds token) and leaves the others where they were:
// they are read unacknowledged and handed back when the channel closes.
func discardOurs(t *testing.T, amqpURL, queue, token string) {
	t.Helper()
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Errorf("clean %s: %v", queue, err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Errorf("clean %s: %v", queue, err)
		return
	}
	defer ch.Close()
	for range 100_000 {
		d, ok, err := ch.Get(queue, false)
		if err != nil || !ok {
			return
		}
		reason, _ := d.Headers["x-acemq-error"].(string)
		if strings.Contains(reason, token) || strings.Contains(d.MessageId, token) || strings.Contains(string(d.Body), token) {
			_ = d.Ack(false)
		}
	}
}
