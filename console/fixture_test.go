package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
)

// browser is a hand-written client of a console handler: it keeps the
// cookies the console sets and reads the CSRF token from each page.
type browser struct {
	t       gunit.TestingT
	handler http.Handler
	cookies map[string]*http.Cookie
	csrf    string
}

func newBrowser(t gunit.TestingT, handler http.Handler) *browser {
	return &browser{t: t, handler: handler, cookies: map[string]*http.Cookie{}}
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) do(r *http.Request) *httptest.ResponseRecorder {
	for _, cookie := range b.cookies {
		r.AddCookie(cookie)
	}
	w := httptest.NewRecorder()
	b.handler.ServeHTTP(w, r)
	for _, cookie := range w.Result().Cookies() {
		b.cookies[cookie.Name] = cookie
	}
	if m := csrfInput.FindStringSubmatch(w.Body.String()); m != nil {
		b.csrf = m[1]
	}
	return w
}

func (b *browser) get(path string) *httptest.ResponseRecorder {
	return b.do(httptest.NewRequest(http.MethodGet, path, nil))
}

// post submits form with the page's CSRF token (unless form has its own).
func (b *browser) post(path string, form url.Values) *httptest.ResponseRecorder {
	if !form.Has("csrf") {
		form.Set("csrf", b.csrf)
	}
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(r)
}

// fixture is a console over an in-memory broker with orders.ship, its
// .dlq and .parked declared.
type fixture struct {
	*gunit.Fixture
	broker  *memory.Broker
	console *Console
	browser *browser
}

func (f *fixture) start(options ...Option) {
	if f.broker == nil {
		f.broker = memory.New()
		for _, q := range []string{"orders.ship", "orders.ship.dlq", "orders.ship.parked"} {
			f.So(f.broker.DeclareQueue(q, memory.QueueOptions{Durable: true}), should.BeNil)
		}
	}
	// A budget a loaded machine meets: these tests are about what is read, not how fast.
	base := []Option{Options.Connector(f.broker), Options.Queues("orders.ship"), Options.Logger(quiet()), Options.ScanBudget(time.Minute)}
	f.console = New(append(base, options...)...)
	f.browser = newBrowser(f.T(), f.console)
}

func (f *fixture) Teardown() {
	if f.console != nil {
		f.So(f.console.Close(), should.BeNil)
	}
	if f.broker != nil {
		_ = f.broker.Close()
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// setAside publishes n messages to queue as the settlement decorator sets
// them aside, ids prefix0..prefix{n-1}, with reason(i).
func (f *fixture) setAside(queue, prefix string, n int, reason func(i int) string) {
	ctx := context.Background()
	for i := range n {
		err := f.broker.Publish(ctx, messaging.Dispatch{
			RoutingKey: queue, MessageID: fmt.Sprint(prefix, i), MessageType: "order-placed", Mandatory: true,
			Attempt: 5, Error: reason(i), FirstSeen: time.Date(2026, 3, 1, 10, 0, i, 0, time.UTC),
			Payload: []byte(fmt.Sprintf(`{"order_id":"%s%d"}`, prefix, i)),
		})
		f.So(err, should.BeNil)
	}
}

// drain takes every message of queue and returns their ids in order.
func (f *fixture) drain(queue string) []string {
	var ids []string
	for {
		d, ok := f.broker.Pull(queue)
		if !ok {
			return ids
		}
		ids = append(ids, d.MessageID)
	}
}

// waitJob waits for the job the response redirected to, and returns it.
func (f *fixture) waitJob(w *httptest.ResponseRecorder) *job {
	f.T().Helper()
	location := w.Header().Get("Location")
	id, ok := strings.CutPrefix(location, "/jobs/")
	if w.Code != http.StatusSeeOther || !ok {
		f.T().Fatalf("no job started: %d %s\n%s", w.Code, location, w.Body.String())
	}
	j, ok := f.console.jobs.get(id)
	if !ok {
		f.T().Fatalf("job %s unknown", id)
	}
	select {
	case <-j.done:
	case <-time.After(30 * time.Second):
		f.T().Fatalf("job %s did not finish", id)
	}
	return j
}
