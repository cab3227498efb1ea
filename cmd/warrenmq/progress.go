package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The -progress modes of the verbs that move many messages or rows.
const (
	progressAuto  = "auto"  // a bar when stderr is a terminal, lines otherwise
	progressBar   = "bar"   // a bar redrawn in place
	progressLines = "lines" // a line every progressEvery
	progressNone  = "none"  // nothing until the totals
)

var (
	// progressEvery is how often the lines mode writes a line: often enough
	// that a log shows the operation is alive, rarely enough that 20,000
	// messages make a few lines. Tests shorten it.
	progressEvery = 2 * time.Second
	// barEvery is how often the bar is redrawn on a terminal.
	barEvery = 200 * time.Millisecond
)

// checkProgressMode refuses a -progress value that is none of the modes.
func checkProgressMode(mode string) error {
	switch mode {
	case progressAuto, progressBar, progressLines, progressNone:
		return nil
	}
	return fmt.Errorf("%w: -progress %q; use auto, bar, lines or none", errUsage, mode)
}

// terminal is a writer that knows whether it is a terminal; redacting
// passes the question on to what it wraps.
type terminal interface {
	IsTerminal() bool
}

// isTerminal reports whether w is a terminal (a character device), without
// a dependency: os.File.Stat's ModeCharDevice.
func isTerminal(w io.Writer) bool {
	switch w := w.(type) {
	case terminal:
		return w.IsTerminal()
	case *os.File:
		info, err := w.Stat()
		return err == nil && info.Mode()&os.ModeCharDevice != 0
	}
	return false
}

// IsTerminal reports whether the writer r masks is a terminal.
func (r redacting) IsTerminal() bool { return isTerminal(r.w) }

// progress reports how far a long operation got, on its own goroutine,
// which stop ends: a bar redrawn in place on a terminal, a line every
// progressEvery otherwise. The operation counts with done and skip, from
// any goroutine.
type progress struct {
	w       io.Writer
	label   string // "replay orders.dlq"
	unit    string // "messages", "rows"
	verb    string // "moved", "released"
	total   int64  // 0 when unknown
	bar     bool
	started time.Time

	done, skipped atomic.Int64

	stopOnce sync.Once
	quit     chan struct{}
	exited   chan struct{}
}

// startProgress starts reporting on w in mode; total is how many the
// operation expects to handle (0: unknown). In mode none it reports nothing.
func startProgress(w io.Writer, mode, label, unit, verb string, total int) *progress {
	p := &progress{w: w, label: label, unit: unit, verb: verb, total: int64(total), started: time.Now(),
		quit: make(chan struct{}), exited: make(chan struct{})}
	if mode == progressAuto {
		mode = progressLines
		if isTerminal(w) {
			mode = progressBar
		}
	}
	if mode == progressNone {
		close(p.exited)
		return p
	}
	p.bar = mode == progressBar
	every := progressEvery
	if p.bar {
		every = barEvery
	}
	go p.report(every)
	return p
}

// report writes the state every interval until stop.
func (p *progress) report(every time.Duration) {
	defer close(p.exited)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-p.quit:
			if p.bar { // the final state, and the line ended
				fmt.Fprintf(p.w, "\r%s\x1b[K\n", p.barLine())
			}
			return
		case <-ticker.C:
			if p.bar {
				fmt.Fprintf(p.w, "\r%s\x1b[K", p.barLine())
			} else {
				fmt.Fprintln(p.w, p.line())
			}
		}
	}
}

// stop ends the reporting (the bar drawn one last time) and waits for the
// goroutine; it may be called more than once.
func (p *progress) stop() {
	p.stopOnce.Do(func() { close(p.quit) })
	<-p.exited
}

// elapsed is the time since the operation started.
func (p *progress) elapsed() time.Duration { return time.Since(p.started) }

// rate is how many were handled per second so far.
func (p *progress) rate() float64 {
	seconds := p.elapsed().Seconds()
	if seconds <= 0 {
		return 0
	}
	return float64(p.done.Load()+p.skipped.Load()) / seconds
}

// counts is "10240 of 20006 (51%)", or "10240" when the total is unknown.
func (p *progress) counts() string {
	handled := p.done.Load() + p.skipped.Load()
	if p.total <= 0 {
		return fmt.Sprint(handled)
	}
	return fmt.Sprintf("%d of %d (%d%%)", handled, p.total, percent(handled, p.total))
}

// line is one line of the lines mode:
// "replay orders.dlq: 10240 of 20006 (51%) messages, 10240 moved, 0 skipped, 2131/s, 4.8s".
func (p *progress) line() string {
	return fmt.Sprintf("%s: %s %s, %d %s, %d skipped, %.0f/s, %s", p.label, p.counts(), p.unit,
		p.done.Load(), p.verb, p.skipped.Load(), p.rate(), p.elapsed().Round(100*time.Millisecond))
}

// barWidth is how many cells the bar has.
const barWidth = 30

// barLine is the bar: "replay orders.dlq [=========>          ] 10240 of 20006 (51%) 2131/s 4.8s eta 4.6s".
func (p *progress) barLine() string {
	handled := p.done.Load() + p.skipped.Load()
	var bar strings.Builder
	filled := 0
	if p.total > 0 {
		filled = int(percent(handled, p.total) * barWidth / 100)
	}
	bar.WriteString(strings.Repeat("=", filled))
	if filled < barWidth {
		bar.WriteString(">")
		bar.WriteString(strings.Repeat(" ", barWidth-filled-1))
	}
	line := fmt.Sprintf("%s [%s] %s %.0f/s %s", p.label, bar.String(), p.counts(), p.rate(), p.elapsed().Round(100*time.Millisecond))
	if rate := p.rate(); p.total > handled && rate > 0 {
		line += " eta " + (time.Duration(float64(p.total-handled) / rate * float64(time.Second))).Round(time.Second).String()
	}
	return line
}

// percent is n of total in whole percent, at most 100 (a queue may grow
// while it is read).
func percent(n, total int64) int64 {
	if total <= 0 {
		return 0
	}
	return min(n*100/total, 100)
}
