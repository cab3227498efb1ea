package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
)

// fakeTerminal is a buffer that says it is a terminal, as a tty on stderr
// does.
type fakeTerminal struct{ testenv.LogBuffer }

func (*fakeTerminal) IsTerminal() bool { return true }

// Without a terminal, progress is a line every progressEvery with the
// counts, the share of the total and the rate; nothing once stopped.
func TestProgressLinesEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testenv.LogBuffer{}
		p := startProgress(out, progressAuto, "replay orders.dlq", "messages", "moved", 1000)
		defer p.stop()
		p.done.Add(400)
		p.skipped.Add(100)
		time.Sleep(progressEvery + time.Millisecond) // the bubble's clock: one interval passes, at once
		synctest.Wait()
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 1 || lines[0] != fmt.Sprintf("replay orders.dlq: 500 of 1000 (50%%) messages, 400 moved, 100 skipped, %.0f/s, %s", 500/progressEvery.Seconds(), progressEvery) {
			t.Fatalf("after one interval: %q", out.String())
		}
		p.done.Add(500)
		time.Sleep(progressEvery) // the bubble's clock: a second interval
		synctest.Wait()
		p.stop()
		p.stop() // twice is harmless
		lines = strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[1], "replay orders.dlq: 1000 of 1000 (100%) messages, 900 moved") {
			t.Fatalf("after two intervals: %q", out.String())
		}
		if strings.Contains(out.String(), "\r") {
			t.Fatalf("no bar off a terminal: %q", out.String())
		}
	})
}

// On a terminal, progress is one bar redrawn in place, drawn a last time
// full and its line ended when stopped.
func TestProgressBarOnATerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &fakeTerminal{}
		p := startProgress(redacting{w: out}, progressAuto, "replay q.dlq", "messages", "moved", 200)
		defer p.stop()
		p.done.Add(50)
		time.Sleep(barEvery + time.Millisecond) // the bubble's clock: one redraw is due
		synctest.Wait()
		first := out.String()
		if !strings.HasPrefix(first, "\rreplay q.dlq [=======>                      ] 50 of 200 (25%)") || strings.Contains(first, "\n") || !strings.Contains(first, "eta ") {
			t.Fatalf("the first bar: %q", first)
		}
		p.done.Add(150)
		p.stop()
		last := out.String()[strings.LastIndex(out.String(), "\r"):]
		if !strings.HasPrefix(last, "\rreplay q.dlq [==============================] 200 of 200 (100%)") || !strings.HasSuffix(last, "\x1b[K\n") {
			t.Fatalf("the last bar: %q", last)
		}
	})
}

func TestProgressModes(t *testing.T) {
	out := &testenv.LogBuffer{}
	p := startProgress(out, progressNone, "x", "rows", "released", 0)
	p.done.Add(3)
	p.stop()
	if out.String() != "" {
		t.Fatalf("-progress none printed %q", out)
	}
	if p := (&progress{total: 0}); p.counts() != "0" {
		t.Fatalf("an unknown total: %q", p.counts())
	}
	if percent(300, 200) != 100 || percent(1, 0) != 0 {
		t.Fatal("percent is at most 100 and 0 of an unknown total")
	}
	if err := checkProgressMode("fancy"); err == nil || exitCode(err) != exitUsage {
		t.Fatalf("-progress fancy: %v", err)
	}
	if isTerminal(&bytes.Buffer{}) || !isTerminal(redacting{w: &fakeTerminal{}}) {
		t.Fatal("isTerminal must ask the writer a redacting writer wraps")
	}
}
