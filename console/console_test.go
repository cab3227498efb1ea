package console

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestConsoleFixture(t *testing.T) {
	gunit.Run(new(ConsoleFixture), t)
}

type ConsoleFixture struct{ fixture }

func (f *ConsoleFixture) TestTheOverviewListsTheNamedQueuesAndWhatTheirNamesImply() {
	f.start()
	f.setAside("orders.ship.dlq", "d", 3, func(int) string { return "boom" })
	w := f.browser.get("/")
	f.So(w.Code, should.Equal, http.StatusOK)
	body := w.Body.String()
	for _, q := range []string{"orders.ship", "orders.ship.dlq", "orders.ship.parked"} {
		f.So(body, should.ContainSubstring, ">"+q+"<")
	}
	f.So(body, should.ContainSubstring, "3 message(s) wait in dead-letter and parking queues")
	f.So(w.Header().Get("Content-Security-Policy"), should.Equal, contentSecurityPolicy)
}

func (f *ConsoleFixture) TestASetAsideQueueIsGroupedByReasonWithIdsAndNumbersFolded() {
	f.start()
	f.setAside("orders.ship.dlq", "p", 30, func(i int) string {
		return fmt.Sprintf("exhausted 5 attempts: payment service 50%d for order 7c9e6679-7425-40de-944b-e07fc1f90a%02d", i%4, i)
	})
	f.setAside("orders.ship.dlq", "c", 7, func(i int) string { return fmt.Sprintf("card declined (code %d)", 1000+i) })
	w := f.browser.get("/queues/orders.ship.dlq")
	f.So(w.Code, should.Equal, http.StatusOK)
	body := w.Body.String()
	f.So(body, should.ContainSubstring, "exhausted # attempts: payment service # for order {id}")
	f.So(body, should.ContainSubstring, `<td class="n count">30</td>`)
	f.So(body, should.ContainSubstring, "card declined (code #)")
	f.So(body, should.ContainSubstring, `<td class="n count">7</td>`)
	f.So(body, should.ContainSubstring, "The counts below cover all 37 message(s) of the queue")
	f.So(f.drain("orders.ship.dlq"), should.Equal, ids("p", 30, "c", 7))
}

// ids is prefix0..prefix{n-1} for each (prefix, n) pair, in order.
func ids(pairs ...any) []string {
	var list []string
	for i := 0; i < len(pairs); i += 2 {
		for n := range pairs[i+1].(int) {
			list = append(list, fmt.Sprint(pairs[i], n))
		}
	}
	return list
}

func (f *ConsoleFixture) TestAReadOnlyConsoleRefusesEveryAction() {
	f.start()
	f.setAside("orders.ship.dlq", "d", 2, func(int) string { return "boom" })
	f.browser.get("/queues/orders.ship.dlq")
	w := f.browser.post("/queues/orders.ship.dlq/count", url.Values{"scope": {"filter"}})
	f.So(w.Code, should.Equal, http.StatusForbidden)
	f.So(w.Body.String(), should.ContainSubstring, "read-only")
	f.So(f.console.jobs.list(), should.BeEmpty)
}

func (f *ConsoleFixture) TestAnActionWithoutTheSessionsCSRFTokenIsRefused() {
	f.start(Options.Actions(true))
	f.browser.get("/")
	w := f.browser.post("/queues/orders.ship.dlq/count", url.Values{"scope": {"filter"}, "csrf": {"forged"}})
	f.So(w.Code, should.Equal, http.StatusForbidden)
	f.So(w.Body.String(), should.ContainSubstring, "CSRF token does not match")

	other := newBrowser(f.T(), f.console) // another session's token does not fit this one
	other.get("/")
	w = f.browser.post("/queues/orders.ship.dlq/count", url.Values{"scope": {"filter"}, "csrf": {other.csrf}})
	f.So(w.Code, should.Equal, http.StatusForbidden)
	f.So(f.console.jobs.list(), should.BeEmpty)
}

func (f *ConsoleFixture) TestAnActionFromAnotherSiteIsRefused() {
	f.start(Options.Actions(true))
	f.browser.get("/")
	form := url.Values{"scope": {"filter"}, "csrf": {f.browser.csrf}}
	r := newPost("/queues/orders.ship.dlq/count", form)
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	w := f.browser.do(r)
	f.So(w.Code, should.Equal, http.StatusForbidden)
	f.So(w.Body.String(), should.ContainSubstring, "another site")
}

func newPost(path string, form url.Values) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

func (f *ConsoleFixture) TestAGroupIsCountedThenReplayedOnlyWhenConfirmed() {
	f.start(Options.Actions(true))
	f.setAside("orders.ship.dlq", "a", 20, func(i int) string { return fmt.Sprintf("warehouse %d closed", i) })
	f.setAside("orders.ship.dlq", "b", 5, func(int) string { return "courier refused" })
	f.browser.get("/queues/orders.ship.dlq")
	key := groupKey(fold("warehouse 1 closed"))

	count := f.waitJob(f.browser.post("/queues/orders.ship.dlq/count", url.Values{"scope": {"group"}, "group": {key}, "reason": {"warehouse # closed"}}))
	f.So(count.Counted, should.Equal, 20)
	f.So(f.broker.MessageCount("orders.ship"), should.Equal, 0) // a count moves nothing
	page := f.browser.get("/jobs/" + count.ID).Body.String()
	f.So(page, should.ContainSubstring, `id="would-move">20<`)

	w := f.browser.post("/jobs/"+count.ID+"/confirm", url.Values{"confirm": {"19"}})
	f.So(w.Code, should.Equal, http.StatusBadRequest)
	f.So(f.broker.MessageCount("orders.ship"), should.Equal, 0)
	f.setAside("orders.ship.dlq", "late", 3, func(int) string { return "warehouse 9 closed" }) // after the count: not confirmed

	moved := f.waitJob(f.browser.post("/jobs/"+count.ID+"/confirm", url.Values{"confirm": {"20"}}))
	f.So(moved.Result.Moved, should.Equal, 20)
	f.So(moved.Err, should.BeEmpty)
	f.So(f.browser.get("/jobs/"+moved.ID).Body.String(), should.ContainSubstring, "moved 20, skipped 0 (limit)")
	f.So(f.drain("orders.ship"), should.Equal, ids("a", 20))
	f.So(f.drain("orders.ship.dlq"), should.Equal, ids("b", 5, "late", 3))
}

func (f *ConsoleFixture) TestASelectionReplaysOnlyTheTickedMessages() {
	var logged bytes.Buffer // written before each job is done, read after
	f.start(Options.Actions(true), Options.Logger(slog.New(slog.NewTextHandler(&logged, nil))))
	f.setAside("orders.ship.parked", "m", 6, func(int) string { return "could not be decoded: bad json" })
	f.browser.get("/queues/orders.ship.parked")
	count := f.waitJob(f.browser.post("/queues/orders.ship.parked/count", url.Values{"scope": {"selection"}, "id": {"m1", "m4"}}))
	f.So(count.Counted, should.Equal, 2)
	moved := f.waitJob(f.browser.post("/jobs/"+count.ID+"/confirm", url.Values{"confirm": {"2"}}))
	f.So(f.drain("orders.ship"), should.Equal, []string{"m1", "m4"})
	f.So(f.drain("orders.ship.parked"), should.Equal, []string{"m0", "m2", "m3", "m5"})

	var lines []string
	for line := range strings.Lines(logged.String()) {
		lines = append(lines, line[strings.Index(line, "level="):]) // after the time
	}
	f.So(lines, should.Equal, []string{
		fmt.Sprintf("level=INFO msg=\"Console job started\" job=%s kind=count queue=orders.ship.parked scope=\"2 selected message(s)\" limit=0\n", count.ID),
		fmt.Sprintf("level=INFO msg=\"Console job finished\" job=%s kind=count queue=orders.ship.parked result=\"would move 2, skipped 4 (drained)\"\n", count.ID),
		fmt.Sprintf("level=INFO msg=\"Console job started\" job=%s kind=replay queue=orders.ship.parked scope=\"2 selected message(s)\" limit=2\n", moved.ID),
		fmt.Sprintf("level=INFO msg=\"Console job finished\" job=%s kind=replay queue=orders.ship.parked result=\"moved 2, skipped 3 (limit)\"\n", moved.ID),
	})
}

func (f *ConsoleFixture) TestAFilterReplaysWhatMatchesIt() {
	f.start(Options.Actions(true))
	f.setAside("orders.ship.dlq", "x", 4, func(i int) string { return fmt.Sprint("timeout calling ", []string{"payments", "stock"}[i%2]) })
	f.browser.get("/queues/orders.ship.dlq")
	count := f.waitJob(f.browser.post("/queues/orders.ship.dlq/count", url.Values{"scope": {"filter"}, "error": {"stock"}, "type": {"order-placed"}}))
	f.So(count.Counted, should.Equal, 2)
	f.waitJob(f.browser.post("/jobs/"+count.ID+"/confirm", url.Values{"confirm": {"2"}}))
	f.So(f.drain("orders.ship"), should.Equal, []string{"x1", "x3"})
}

func (f *ConsoleFixture) TestACensusCountsEveryReasonBeyondThePagesBounds() {
	f.start(Options.Actions(true), Options.ScanLimit(50))
	f.setAside("orders.ship.dlq", "a", 120, func(i int) string { return fmt.Sprintf("timeout %d", i) })
	f.setAside("orders.ship.dlq", "b", 80, func(int) string { return "card declined" })
	page := f.browser.get("/queues/orders.ship.dlq").Body.String()
	f.So(page, should.ContainSubstring, "The counts below cover the first <strong>50</strong> of 200 messages")
	census := f.waitJob(f.browser.post("/queues/orders.ship.dlq/census", url.Values{}))
	f.So(census.Census.Scan.Complete(), should.BeTrue)
	page = f.browser.get("/queues/orders.ship.dlq").Body.String()
	f.So(page, should.ContainSubstring, "read 200 message(s), the whole queue")
	f.So(page, should.ContainSubstring, `<td class="n">120</td><td>timeout #</td>`)
	f.So(page, should.ContainSubstring, `<td class="n">80</td><td>card declined</td>`)
	f.So(f.drain("orders.ship.dlq"), should.Equal, ids("a", 120, "b", 80))
}

func (f *ConsoleFixture) TestOneJobAtATimePerQueue() {
	f.start(Options.Actions(true))
	j := &job{Kind: jobCount, Queue: "orders.ship.dlq", done: make(chan struct{})}
	f.So(f.console.jobs.add(j), should.BeNil)
	f.browser.get("/")
	csrf := f.console.csrf(f.browser.cookies[sessionCookie].Value)
	w := f.browser.post("/queues/orders.ship.dlq/count", url.Values{"scope": {"filter"}, "csrf": {csrf}})
	f.So(w.Code, should.Equal, http.StatusConflict)
	f.So(w.Body.String(), should.ContainSubstring, "a count of orders.ship.dlq is running")
	f.So(f.browser.get("/queues/orders.ship.dlq").Body.String(), should.ContainSubstring, "A count of this queue is running")
	f.console.jobs.finish(j)
}
