package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
)

// routes are the console's pages and actions under its mount path.
func (c *Console) routes() http.Handler {
	m := c.config.mount
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+m+"{$}", c.overviewPage)
	mux.HandleFunc("GET "+m+"console.css", c.stylesheet)
	mux.HandleFunc("GET "+m+"queues/{queue}", c.queuePage)
	mux.HandleFunc("GET "+m+"queues/{queue}/groups/{group}", c.groupPage)
	mux.HandleFunc("GET "+m+"queues/{queue}/messages/{id}", c.messagePage)
	mux.HandleFunc("POST "+m+"queues/{queue}/count", c.countAction)
	mux.HandleFunc("POST "+m+"queues/{queue}/census", c.censusAction)
	mux.HandleFunc("GET "+m+"jobs", c.jobsPage)
	mux.HandleFunc("GET "+m+"jobs/{id}", c.jobPage)
	mux.HandleFunc("POST "+m+"jobs/{id}/confirm", c.confirmAction)
	mux.HandleFunc("GET "+m+"outbox", c.outboxPage)
	mux.HandleFunc("POST "+m+"outbox/release", c.releaseAction)
	mux.HandleFunc("GET "+m+"health", c.healthPage)
	mux.HandleFunc(m, func(w http.ResponseWriter, r *http.Request) {
		c.problem(w, r, http.StatusNotFound, "there is no such page in the console; start from its overview")
	})
	return c.secure(mux)
}

func (c *Console) stylesheet(w http.ResponseWriter, _ *http.Request) {
	css, _ := assets.ReadFile("assets/console.css")
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(css)
}

// link is a path under the console's mount, each part escaped.
func (c *Console) path(parts ...string) string {
	escaped := make([]string, len(parts))
	for i, p := range parts {
		escaped[i] = url.PathEscape(p)
	}
	return c.config.mount + strings.Join(escaped, "/")
}

// queueRow is one line of the overview.
type queueRow struct {
	Series   series
	Last     sample
	Rate     float64
	HasRate  bool
	Chart    chart
	SetAside bool
}

// overviewView is the overview page.
type overviewView struct {
	Rows      []queueRow
	SampledAt time.Time
	Err       string
	Listing   string
	Waiting   int // messages in set-aside queues
	Jobs      []*job
	Window    time.Duration
}

func (c *Console) overviewPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.pageContext(r)
	defer cancel()
	if c.history.stale(time.Now()) {
		_, err := await(c, ctx, "sampling the queues", func(ctx context.Context) (struct{}, error) {
			c.sample(ctx)
			return struct{}{}, nil
		})
		if err != nil {
			c.config.logger.Warn("Console overview did not wait for a fresh sample; it shows the last one", "error", c.redactErr(err))
		}
	}
	list, at, err, listing := c.history.snapshot()
	v := overviewView{SampledAt: at, Err: err, Listing: listing, Jobs: c.jobs.list(), Window: c.config.window}
	now := time.Now()
	for _, s := range list {
		row := queueRow{Series: s, Last: s.Last(), Chart: chartOf(s, c.config.window, now), SetAside: setAside(s.Queue.Role)}
		row.Rate, row.HasRate = s.Rate()
		if row.SetAside && !row.Last.Missing {
			v.Waiting += row.Last.Messages
		}
		v.Rows = append(v.Rows, row)
	}
	if len(v.Jobs) > 5 {
		v.Jobs = v.Jobs[:5]
	}
	c.render(w, r, http.StatusOK, "overview", "Queues", "overview", v)
}

// queueView is a queue's page.
type queueView struct {
	Queue     string
	Role      string
	Source    string
	State     messaging.QueueState
	Missing   bool
	StateErr  string
	Survey    survey
	SurveyErr string
	Busy      *job
	Census    *census
	Group     group // on a group's page
	Page      int
	PageSize  int
	HasMore   bool
	Limit     int
	Budget    time.Duration
}

// roleFor is the role of a queue the console watches, or what its name says.
func (c *Console) roleFor(queue string) string {
	for _, w := range implied(c.config) {
		if w.Name == queue {
			return w.Role
		}
	}
	return roleOf(queue, "")
}

// queueState fills v's depth within ctx.
func (c *Console) queueState(ctx context.Context, v *queueView) {
	state, err := await(c, ctx, "the broker", func(ctx context.Context) (messaging.QueueState, error) {
		return c.inspect(ctx, v.Queue)
	})
	switch {
	case errors.Is(err, messaging.ErrNotFound):
		v.Missing = true
	case err != nil:
		v.StateErr = c.redactErr(err)
	}
	v.State = state
}

// surveyed reads v's queue for the page (groupKey "" for every message).
func (c *Console) surveyed(ctx context.Context, v *queueView, groupKey string) {
	v.Limit, v.Budget, v.PageSize = c.config.scanLimit, c.config.scanBudget, c.config.pageSize
	if v.Missing || v.StateErr != "" || !setAside(v.Role) {
		return
	}
	if v.Busy = c.jobs.running(v.Queue); v.Busy != nil {
		return // the job holds the messages: reading now would see a part of them
	}
	s, err := await(c, ctx, "reading "+v.Queue, func(ctx context.Context) (survey, error) {
		return c.surveyQueue(ctx, v.Queue, groupKey, v.Page)
	})
	v.Survey, v.SurveyErr = s, c.redactErr(err)
	v.HasMore = s.Matched > v.Page*v.PageSize
	v.Census = c.jobs.latestCensus(v.Queue)
}

// pageNumber reads ?page=, at least 1 and at most what the scan limit can reach.
func (c *Console) pageNumber(r *http.Request) int {
	page, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || page < 1 {
		return 1
	}
	return min(page, max(c.config.scanLimit/c.config.pageSize, 1))
}

func (c *Console) queuePage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.pageContext(r)
	defer cancel()
	v := &queueView{Queue: r.PathValue("queue"), Page: c.pageNumber(r)}
	v.Role = c.roleFor(v.Queue)
	v.Source = sourceOf(v.Queue)
	c.queueState(ctx, v)
	c.surveyed(ctx, v, "")
	c.render(w, r, http.StatusOK, "queue", v.Queue, "overview", v)
}

func (c *Console) groupPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.pageContext(r)
	defer cancel()
	v := &queueView{Queue: r.PathValue("queue"), Page: c.pageNumber(r)}
	v.Role, v.Source = c.roleFor(v.Queue), sourceOf(v.Queue)
	key := r.PathValue("group")
	c.queueState(ctx, v)
	c.surveyed(ctx, v, key)
	v.Group = group{Key: key}
	for _, g := range v.Survey.Groups {
		if g.Key == key {
			v.Group = g
		}
	}
	c.render(w, r, http.StatusOK, "group", v.Queue, "overview", v)
}

// messageView is the page of one message.
type messagePageView struct {
	Queue   string
	ID      string
	Message messageView
	Found   bool
	Scan    scanned
	Limit   int
	Err     string
	Busy    *job
}

func (c *Console) messagePage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.pageContext(r)
	defer cancel()
	v := messagePageView{Queue: r.PathValue("queue"), ID: r.PathValue("id"), Limit: c.config.scanLimit}
	if !setAside(c.roleFor(v.Queue)) {
		c.problem(w, r, http.StatusNotFound, "the console browses only set-aside queues ({queue}.dlq and {queue}.parked)")
		return
	}
	if v.Busy = c.jobs.running(v.Queue); v.Busy == nil {
		type found struct {
			view messageView
			scan scanned
			ok   bool
		}
		got, err := await(c, ctx, "reading "+v.Queue, func(ctx context.Context) (found, error) {
			view, scan, ok, err := c.find(ctx, v.Queue, v.ID)
			return found{view, scan, ok}, err
		})
		v.Message, v.Scan, v.Found, v.Err = got.view, got.scan, got.ok, c.redactErr(err)
	}
	c.render(w, r, http.StatusOK, "message", v.ID, "overview", v)
}

// scopeOf reads a replay's scope from its form.
func scopeOf(r *http.Request) (scope, error) {
	s := scope{Kind: r.PostFormValue("scope")}
	switch s.Kind {
	case "group":
		s.Group, s.Reason = r.PostFormValue("group"), r.PostFormValue("reason")
		if s.Group == "" {
			return s, errors.New("the form names no group")
		}
	case "selection":
		s.IDs = r.PostForm["id"]
		if len(s.IDs) == 0 {
			return s, errors.New("no message was selected: tick the messages to replay first")
		}
	case "filter":
		s.Type, s.ErrorContains = strings.TrimSpace(r.PostFormValue("type")), r.PostFormValue("error")
		s.HeaderName, s.HeaderValue = strings.TrimSpace(r.PostFormValue("header")), r.PostFormValue("value")
	default:
		return s, errors.New("the form says neither group, selection nor filter")
	}
	return s, nil
}

func (c *Console) countAction(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("queue")
	s, err := scopeOf(r)
	if err != nil {
		c.problem(w, r, http.StatusBadRequest, err.Error()+"; nothing was counted or moved")
		return
	}
	c.started(w, r)(c.startCount(queue, s))
}

func (c *Console) censusAction(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("queue")
	if !setAside(c.roleFor(queue)) {
		c.problem(w, r, http.StatusBadRequest, "the console counts reasons only in set-aside queues")
		return
	}
	c.started(w, r)(c.startCensus(queue))
}

func (c *Console) confirmAction(w http.ResponseWriter, r *http.Request) {
	count, ok := c.jobs.get(r.PathValue("id"))
	if !ok {
		c.problem(w, r, http.StatusNotFound, "the console no longer knows that count (it keeps the last 50 jobs); count again")
		return
	}
	if r.PostFormValue("confirm") != strconv.Itoa(count.Counted) {
		c.problem(w, r, http.StatusBadRequest, "the confirmation does not match the count; nothing was moved")
		return
	}
	c.started(w, r)(c.startReplay(count))
}

// started answers an action that started a job: to the job's page, or with
// why it could not start.
func (c *Console) started(w http.ResponseWriter, r *http.Request) func(*job, error) {
	return func(j *job, err error) {
		if err != nil {
			c.problem(w, r, http.StatusConflict, err.Error())
			return
		}
		http.Redirect(w, r, c.path("jobs", j.ID), http.StatusSeeOther)
	}
}

// jobView is a job's page.
type jobView struct {
	Job                  *job
	Running              bool
	Read, Moved, Skipped int64
	Census               *census
	Result               string
	Err                  string
	BoundHit             bool // the count stopped at its bound, not at the queue's end
}

func (c *Console) jobPage(w http.ResponseWriter, r *http.Request) {
	j, ok := c.jobs.get(r.PathValue("id"))
	if !ok {
		c.problem(w, r, http.StatusNotFound, "the console no longer knows that job (it keeps the last 50)")
		return
	}
	v := jobView{Job: j, Running: j.Running()}
	v.Read, v.Moved, v.Skipped = j.Progress()
	if !v.Running { // the fields below are written before the job ends
		v.Census, v.Result, v.Err = j.Census, j.Result.String(), j.Err
		v.BoundHit = j.Kind == jobCount && j.Result.Reason != "drained"
	}
	c.render(w, r, http.StatusOK, "job", j.Kind+" of "+j.Queue, "jobs", v)
}

func (c *Console) jobsPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "jobs", "Jobs", "jobs", c.jobs.list())
}

func (c *Console) outboxPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.pageContext(r)
	defer cancel()
	views := make([]outboxView, len(c.config.outboxes))
	var wg sync.WaitGroup
	for i, t := range c.config.outboxes {
		wg.Go(func() { views[i] = c.readOutbox(ctx, t) })
	}
	wg.Wait()
	if table, released := r.URL.Query().Get("table"), r.URL.Query().Get("released"); table != "" {
		for i := range views {
			if views[i].Name == table {
				views[i].Released = released
			}
		}
	}
	c.render(w, r, http.StatusOK, "outbox", "Outbox", "outbox", views)
}

func (c *Console) releaseAction(w http.ResponseWriter, r *http.Request) {
	t, ok := c.outbox(r.PostFormValue("table"))
	if !ok {
		c.problem(w, r, http.StatusNotFound, "the console has no outbox table of that name")
		return
	}
	var ids []int64
	for _, text := range r.PostForm["id"] {
		id, err := strconv.ParseInt(text, 10, 64)
		if err != nil || id <= 0 {
			c.problem(w, r, http.StatusBadRequest, "a selected row id is not a number; nothing was released")
			return
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		c.problem(w, r, http.StatusBadRequest, "no row was selected: tick the retired rows to release first")
		return
	}
	ctx, cancel := c.pageContext(r)
	defer cancel()
	n, err := await(c, ctx, "the outbox table "+t.name, func(ctx context.Context) (int, error) { return t.admin.Release(ctx, ids...) })
	if err != nil {
		c.problem(w, r, http.StatusServiceUnavailable, "release failed, so nothing may have changed: "+c.redactErr(err))
		return
	}
	c.config.logger.Info("Console released retired outbox rows", "table", t.name, "released", n, "asked", len(ids))
	target := c.path("outbox") + "?" + url.Values{"table": {t.name}, "released": {strconv.Itoa(n) + " of " + strconv.Itoa(len(ids))}}.Encode()
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// healthView is the health page.
type healthView struct {
	Services       []serviceView
	Streams        []streamView
	Checkpoints    []Checkpoint
	CheckpointsErr string
	HasCheckpoints bool
}

func (c *Console) healthPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.pageContext(r)
	defer cancel()
	v := healthView{Services: make([]serviceView, len(c.config.services)), Streams: make([]streamView, len(c.config.streams))}
	var wg sync.WaitGroup
	for i, address := range c.config.services {
		wg.Go(func() { v.Services[i] = c.askService(ctx, address) })
	}
	for i, name := range c.config.streams {
		wg.Go(func() { v.Streams[i] = c.streamLength(ctx, name) })
	}
	if c.config.checkpoints != nil {
		v.HasCheckpoints = true
		wg.Go(func() {
			checkpoints, err := await(c, ctx, "the checkpoints", c.config.checkpoints)
			v.Checkpoints, v.CheckpointsErr = checkpoints, c.redactErr(err)
		})
	}
	wg.Wait()
	c.render(w, r, http.StatusOK, "health", "Health", "health", v)
}
