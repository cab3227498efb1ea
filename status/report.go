package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/warrenmq/messaging/internal/redact"
)

// Dependency names in a Report.
const (
	// BrokerCheck is the name of the broker probe in a Report.
	BrokerCheck = "broker"
)

// Report is what a /status endpoint serves: the broker probe (through the
// tolerance window) and every check added with Options.Check, each bounded by
// Options.CheckTimeout. Its JSON form is
//
//	{"status":"failing","checks":[{"name":"broker","status":"ok"},{"name":"database","status":"failing","error":"..."}]}
//
// and no error in it carries a password of an address given to Options.Redact.
type Report struct {
	Status string        `json:"status"` // "ok" when every check passed, else "failing"
	Checks []CheckResult `json:"checks"`
}

// CheckResult is one dependency's part of a Report.
type CheckResult struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "ok" or "failing"
	Error  string `json:"error,omitempty"`
}

// Healthy reports whether every check passed.
func (r Report) Healthy() bool { return r.Status == "ok" }

// Report runs the broker probe (as Status does, with its tolerance window) and
// every check added with Options.Check, concurrently, each bounded by
// Options.CheckTimeout (and by ctx), and returns them in the order they were
// configured, the broker first. A check that fails, or does not return within
// its bound, makes the report failing at once: checks have no tolerance window.
func (c *Checker) Report(ctx context.Context) Report {
	names := append([]string{BrokerCheck}, make([]string, len(c.config.checks))...)
	funcs := make([]func(context.Context) error, 0, len(names))
	funcs = append(funcs, c.Status)
	for i, check := range c.config.checks {
		names[i+1] = check.name
		funcs = append(funcs, check.check)
	}

	results := make([]CheckResult, len(names))
	var wg sync.WaitGroup
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = CheckResult{Name: names[i], Status: "ok"}
			if err := c.bounded(ctx, i, funcs[i]); err != nil {
				results[i].Status = "failing"
				results[i].Error = c.redact(err).Error()
			}
		}()
	}
	wg.Wait()

	report := Report{Status: "ok", Checks: results}
	for _, result := range results {
		if result.Status != "ok" {
			report.Status = "failing"
		}
	}
	return report
}

// errStillRunning reports a check whose earlier run outlived its bound and has
// not returned yet; it is not started again, so a check that ignores its
// context cannot pile up one goroutine per request.
var errStillRunning = errors.New("an earlier run of this check has not returned; it is ignoring its context")

// bounded runs check (the index-th of Report) with ctx limited to the check
// timeout, and returns when the timeout passes even if check ignores its
// context. At most one run of each check is in flight: while one that
// outlived its bound is still running, the check fails at once instead of
// starting another goroutine.
func (c *Checker) bounded(ctx context.Context, index int, check func(context.Context) error) error {
	c.mu.Lock()
	if c.stillRunning[index] {
		c.mu.Unlock()
		return errStillRunning
	}
	if c.stillRunning == nil {
		c.stillRunning = map[int]bool{}
	}
	c.stillRunning[index] = true
	c.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, c.config.checkTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := check(ctx)
		c.mu.Lock()
		delete(c.stillRunning, index)
		c.mu.Unlock()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Give a check that honours its context the chance to say why.
		select {
		case err := <-done:
			return err
		default:
			return fmt.Errorf("did not answer within %s: %w", c.config.checkTimeout, ctx.Err())
		}
	}
}

// redact masks in err's text the password of every address given to
// Options.Redact (internal/redact masks it as given and percent-decoded).
func (c *Checker) redact(err error) error {
	return redact.Error(err, c.config.secrets...)
}

// ServeHTTP serves the Report as JSON: 200 when every check passed, 503 when
// one failed, so a load balancer or an orchestrator reads the code and a
// person the body. Each check is bounded (Options.CheckTimeout) and by the
// request's context; the response is never cached.
func (c *Checker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	report := c.Report(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !report.Healthy() {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(report)
}
