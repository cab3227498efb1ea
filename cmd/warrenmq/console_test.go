package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
