package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
)

func TestTheConsoleAsksForATokenBeyondLoopback(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:7070", "localhost:7070", "[::1]:7070"} {
		token, made, err := accessToken(consoleFlags{listen: listen})
		if token != "" || made || err != nil {
			t.Errorf("-listen %s: token %q (made %v, %v); want none on loopback", listen, token, made, err)
		}
	}
	for _, listen := range []string{"0.0.0.0:7070", ":7070", "10.1.2.3:7070", "ops.example:7070"} {
		token, made, err := accessToken(consoleFlags{listen: listen})
		if len(token) < minTokenLength || !made || err != nil {
			t.Errorf("-listen %s: token %q (made %v, %v); want one made up", listen, token, made, err)
		}
	}
	if token, made, err := accessToken(consoleFlags{listen: "0.0.0.0:7070", token: "given-and-long-enough"}); token != "given-and-long-enough" || made || err != nil {
		t.Errorf("a given token: %q (made %v, %v)", token, made, err)
	}
	if _, _, err := accessToken(consoleFlags{listen: "127.0.0.1:7070", token: "short"}); !errors.Is(err, errUsage) {
		t.Errorf("a short token: %v, want a usage error", err)
	}
}

func TestAMadeUpTokenIsPrintedOnceWithTheAddress(t *testing.T) {
	var out bytes.Buffer
	printServing(&out, "0.0.0.0:7070", "read-only", "s3cr3t-token-of-24-chars", true)
	if got := out.String(); strings.Count(got, "s3cr3t-token-of-24-chars") != 1 || !strings.Contains(got, "http://0.0.0.0:7070/?token=") {
		t.Errorf("printed %q", got)
	}
	out.Reset()
	printServing(&out, "0.0.0.0:7070", "read-only", "given-token-of-24-chars!", false)
	if strings.Contains(out.String(), "given-token") {
		t.Errorf("a given token was printed: %q", out.String())
	}
}

func TestAConsoleWithoutATokenAnswersOnlyToLoopbackNames(t *testing.T) {
	handler := onlyLoopbackHosts(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	for host, want := range map[string]int{
		"127.0.0.1:7070": http.StatusOK, "localhost:7070": http.StatusOK, "[::1]:7070": http.StatusOK,
		"attacker.example:7070": http.StatusMisdirectedRequest, "10.0.0.5": http.StatusMisdirectedRequest,
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
	}
}

func TestConsoleUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"console", "-listen", "nowhere"},
		{"console", "-token", "short"},
		{"console", "-dsn", "x", "-driver", "oracle"},
		{"console", "-dsn", "x", "-driver", "sqlite", "-table", "Messages; DROP TABLE x"},
		{"console", "-policy", "sometimes"},
		{"console", "-amqp", "not a url"},
	} {
		if err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the console's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTheConsoleShowsNoPassword gives the console a broker, a database and a
// service that all refuse, each address with a password, opens every page,
// and finds no password in a page or in what the console printed.
func TestTheConsoleShowsNoPassword(t *testing.T) {
	passwords := []string{"Br0ker#Pass", "Br0ker%23Pass", "D4tabase@Pass", "S3rvice:Pass"}
	var stdout, stderr lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"console", "-listen", "127.0.0.1:0", "-timeout", "1s",
			"-amqp", "amqp://ops:Br0ker%23Pass@127.0.0.1:1/", "-queue", "orders.ship",
			"-driver", "mysql", "-dsn", "root:D4tabase@Pass@tcp(127.0.0.1:1)/test", "-checkpoints", "stream_checkpoints",
			"-service", "http://ops:S3rvice:Pass@127.0.0.1:1/status"}, &stdout, &stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	var base string
	// The console starts on its own goroutine and says where it serves.
	if !testenv.Poll(10*time.Second, func() bool {
		_, after, ok := strings.Cut(stdout.String(), "serving ")
		if ok && len(strings.Fields(after)) > 0 {
			base = strings.Fields(after)[0]
		}
		return base != ""
	}) {
		t.Fatalf("the console did not serve: %s %s", stdout.String(), stderr.String())
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, path := range []string{"", "queues/orders.ship.dlq", "queues/orders.ship.dlq/messages/x", "outbox", "health"} {
		response, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(response.Body)
		_ = response.Body.Close()
		for _, password := range passwords {
			if strings.Contains(string(body), password) {
				t.Errorf("/%s shows the password %q:\n%s", path, password, body)
			}
		}
		if path == "health" && !strings.Contains(string(body), "did not answer") {
			t.Errorf("/health does not say the service did not answer:\n%s", body)
		}
	}
	for _, password := range passwords {
		if printed := stdout.String() + stderr.String(); strings.Contains(printed, password) {
			t.Errorf("the console printed the password %q:\n%s", password, printed)
		}
	}
}
