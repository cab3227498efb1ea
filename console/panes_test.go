package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/status"
)

func TestPanesFixture(t *testing.T) {
	gunit.Run(new(PanesFixture), t)
}

// PanesFixture covers the outbox and health pages and the management
// listing.
type PanesFixture struct{ fixture }

// fakeOutbox is an outbox table in memory.
type fakeOutbox struct {
	pending  []sqlmq.PendingMessage
	retired  []sqlmq.RetiredMessage
	released []int64
	err      error
}

func (o *fakeOutbox) Undispatched(context.Context) (int64, error) {
	return int64(len(o.pending)) + 1000, o.err
}
func (o *fakeOutbox) Pending(_ context.Context, limit int) ([]sqlmq.PendingMessage, error) {
	return o.pending[:min(limit, len(o.pending))], o.err
}
func (o *fakeOutbox) Retired(_ context.Context, limit int) ([]sqlmq.RetiredMessage, error) {
	return o.retired[:min(limit, len(o.retired))], o.err
}
func (o *fakeOutbox) Release(_ context.Context, ids ...int64) (int, error) {
	o.released = append(o.released, ids...)
	return len(ids), o.err
}

func (f *PanesFixture) outbox() *fakeOutbox {
	return &fakeOutbox{
		pending: []sqlmq.PendingMessage{{OutboxRow: sqlmq.OutboxRow{ID: 7, MessageID: "p7", Topic: "order-placed", Attempts: 3, LastError: "publish refused: <b>no route</b>", Created: time.Now().Add(-time.Minute)}}},
		retired: []sqlmq.RetiredMessage{{OutboxRow: sqlmq.OutboxRow{ID: 3, MessageID: "r3", Attempts: 10, LastError: "exceeds the frame size"}}, {OutboxRow: sqlmq.OutboxRow{ID: 4, MessageID: "r4"}}},
	}
}

func (f *PanesFixture) TestTheOutboxPageListsPendingAndRetiredRows() {
	table := f.outbox()
	f.start(Options.Outbox("Messages", table))
	body := f.browser.get("/outbox").Body.String()
	f.So(body, should.ContainSubstring, "<strong>1,001</strong> message(s) not yet confirmed")
	f.So(body, should.ContainSubstring, "the oldest 1 are listed")
	f.So(body, should.ContainSubstring, "publish refused: &lt;b&gt;no route&lt;/b&gt;")
	f.So(body, should.ContainSubstring, "exceeds the frame size")
	f.So(body, should.NotContainSubstring, `name="id" value="3"`) // read-only: nothing to tick
}

func (f *PanesFixture) TestReleasingRetiredRowsNeedsActionsAndReleasesWhatWasTicked() {
	table := f.outbox()
	var logged bytes.Buffer
	f.start(Options.Outbox("Messages", table), Options.Actions(true), Options.Logger(slog.New(slog.NewTextHandler(&logged, nil))))
	f.So(f.browser.get("/outbox").Body.String(), should.ContainSubstring, `name="id" value="3"`)
	w := f.browser.post("/outbox/release", url.Values{"table": {"Messages"}, "id": {"3", "4"}})
	f.So(w.Code, should.Equal, http.StatusSeeOther)
	f.So(table.released, should.Equal, []int64{3, 4})
	f.So(logged.String(), should.EndWith, `level=INFO msg="Console released retired outbox rows" table=Messages released=2 asked=2`+"\n")
	f.So(f.browser.get(w.Header().Get("Location")).Body.String(), should.ContainSubstring, "Released 2 of 2 row(s)")
	f.So(f.browser.post("/outbox/release", url.Values{"table": {"Messages"}, "id": {"x"}}).Code, should.Equal, http.StatusBadRequest)
	f.So(f.browser.post("/outbox/release", url.Values{"table": {"Other"}, "id": {"3"}}).Code, should.Equal, http.StatusNotFound)
	f.So(table.released, should.Equal, []int64{3, 4})
}

func (f *PanesFixture) TestAnOutboxThatFailsSaysWhyWithoutItsPassword() {
	table := &fakeOutbox{err: errors.New("dial root:Sup3rS3cret@tcp(db:3306)/test: refused")}
	f.start(Options.Outbox("Messages", table), Options.Redact("root:Sup3rS3cret@tcp(db:3306)/test"))
	body := f.browser.get("/outbox").Body.String()
	f.So(body, should.ContainSubstring, "refused")
	f.So(body, should.NotContainSubstring, "Sup3rS3cret")
}

func (f *PanesFixture) TestTheHealthPageShowsEachServicesReportAndTheStreams() {
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(status.Report{Status: "failing", Checks: []status.CheckResult{
			{Name: "broker", Status: "ok"}, {Name: "database", Status: "failing", Error: "dial amqp://u:Hush3dPw@db: refused"}}})
	}))
	defer service.Close()
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) }))
	defer silent.Close()
	f.start(Options.Services(service.URL+"/status", silent.URL), Options.Streams("orders.log"),
		Options.Checkpoints(func(context.Context) ([]Checkpoint, error) {
			return []Checkpoint{{Name: "projection", NextOffset: 1234}}, nil
		}))
	f.So(f.broker.DeclareQueue("orders.log", memory.QueueOptions{Durable: true}), should.BeNil)
	body := f.browser.get("/health").Body.String()
	f.So(body, should.ContainSubstring, `<strong class="failing">failing</strong> (HTTP 503)`)
	f.So(body, should.ContainSubstring, "<th>database</th>")
	f.So(body, should.NotContainSubstring, "Hush3dPw")
	f.So(body, should.ContainSubstring, "without a status report")
	f.So(body, should.ContainSubstring, "<td>orders.log</td><td class=\"n\">0</td>")
	f.So(body, should.ContainSubstring, "<td>projection</td><td class=\"n\">1,234</td>")
}

func (f *PanesFixture) TestTheManagementListingAddsTheQueuesThatFollowTheNaming() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, password, _ := r.BasicAuth(); user != "ops" || password != "pw" || r.URL.EscapedPath() != "/api/queues/%2F" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`[{"name":"payments","type":"classic","messages_ready":4,"consumers":2},
			{"name":"payments.dlq","type":"classic","messages_ready":9,"consumers":0},
			{"name":"audit.log","type":"stream","messages_ready":50,"consumers":1},
			{"name":"scratch","type":"classic","messages_ready":1,"consumers":0}]`))
	}))
	defer api.Close()
	address := strings.Replace(api.URL, "http://", "http://ops:pw@", 1)
	f.start(Options.Management(address, "/"))
	body := f.browser.get("/").Body.String()
	f.So(body, should.ContainSubstring, `<a href="/queues/payments.dlq">payments.dlq</a></td>
<td>dead-letter</td>
<td class="n">9</td>`)
	f.So(body, should.ContainSubstring, "<td>payments</td>\n<td>subscription</td>")
	f.So(body, should.ContainSubstring, "<td>audit.log</td>\n<td>stream</td>")
	f.So(body, should.NotContainSubstring, "scratch")
	f.So(body, should.ContainSubstring, "not declared") // orders.ship, named but not listed
	f.So(body, should.NotContainSubstring, "ops:pw")
}

func TestTheSamplerDrawsDepthOverTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := memory.New()
		defer broker.Close()
		_ = broker.DeclareQueue("orders.ship", memory.QueueOptions{Durable: true})
		c := New(Options.Connector(broker), Options.Queues("orders.ship"), Options.SampleInterval(10*time.Second), Options.Window(time.Minute), Options.Logger(quiet()))
		defer c.Close()
		go c.Listen()
		for i := range 12 { // two minutes: ten messages more every ten seconds
			synctest.Wait()
			for range 10 {
				_ = broker.Publish(context.Background(), messaging.Dispatch{RoutingKey: "orders.ship", Payload: []byte("x")})
			}
			if i < 11 {
				time.Sleep(10 * time.Second) // the bubble's clock: the sampler's interval passes, at once
			}
		}
		time.Sleep(10 * time.Second) // the bubble's clock: the last interval passes
		synctest.Wait()
		list, _, _, _ := c.history.snapshot()
		if len(list) == 0 || len(list[0].Samples) != 7 {
			t.Fatalf("the window of a minute at one sample each 10s holds %d samples, want 7: %+v", len(list[0].Samples), list)
		}
		if rate, ok := list[0].Rate(); !ok || rate != 1 {
			t.Fatalf("the net rate is %v (%v), want +1/s", rate, ok)
		}
		body := newBrowser(t, c).get("/").Body.String()
		if !strings.Contains(body, "<polyline points=") || !strings.Contains(body, "&#43;1.0/s") || !strings.Contains(body, ">120<") {
			t.Fatalf("the overview lacks the chart, the rate or the depth:\n%s", body)
		}
	})
}
