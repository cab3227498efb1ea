package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestHostileFixture(t *testing.T) {
	gunit.Run(new(HostileFixture), t)
}

// HostileFixture shows what a page makes of messages written to harm it,
// of a token it lacks, of a broker that does not answer and of a password
// in an error.
type HostileFixture struct{ fixture }

func (f *HostileFixture) publish(id string, payload []byte, reason string) {
	err := f.broker.Publish(context.Background(), messaging.Dispatch{
		RoutingKey: "orders.ship.parked", MessageID: id, Mandatory: true, Error: reason, Payload: payload,
		Headers: map[string]any{"note": "<img src=x onerror=alert(2)>"},
	})
	f.So(err, should.BeNil)
}

func (f *HostileFixture) TestMarkupInAMessageIsShownAsTextNeverAsMarkup() {
	f.start()
	f.publish("h1", []byte(`<script>alert(1)</script><b onmouseover="alert(3)">x</b>`), `<script>alert("reason")</script>`)
	for _, path := range []string{"/queues/orders.ship.parked", "/queues/orders.ship.parked/messages/h1"} {
		body := f.browser.get(path).Body.String()
		f.So(body, should.ContainSubstring, "&lt;script&gt;alert(1)&lt;/script&gt;")
		f.So(body, should.NotContainSubstring, "<script")
		f.So(body, should.NotContainSubstring, "<b onmouseover")
		f.So(body, should.NotContainSubstring, "<img")
	}
}

func (f *HostileFixture) TestInvalidUTF8AndBinaryAreShownAsEscapesAndHex() {
	f.start()
	f.publish("u1", []byte("caf\xe9 \x1b[31m red"), "bad")
	f.publish("b1", append([]byte{0x7f, 'E', 'L', 'F', 0, 1, 2}, bytes.Repeat([]byte{0xff}, 40)...), "bad")
	text := f.browser.get("/queues/orders.ship.parked/messages/u1").Body.String()
	f.So(text, should.ContainSubstring, `caf\xe9 \u001b[31m red`)
	binary := f.browser.get("/queues/orders.ship.parked/messages/b1").Body.String()
	f.So(binary, should.ContainSubstring, "00000000  7f 45 4c 46 00 01 02 ff")
	f.So(binary, should.ContainSubstring, "not text: the first bytes in hex")
}

func (f *HostileFixture) TestAFiftyMegabytePayloadIsCutAndItsSizeSaid() {
	f.start()
	f.publish("big", bytes.Repeat([]byte("a"), 50<<20), "too big to show")
	list := f.browser.get("/queues/orders.ship.parked")
	f.So(list.Body.Len(), should.BeLessThan, 64<<10)
	f.So(list.Body.String(), should.ContainSubstring, "52,428,800 bytes")
	detail := f.browser.get("/queues/orders.ship.parked/messages/big")
	f.So(detail.Body.Len(), should.BeLessThan, 128<<10)
	f.So(detail.Body.String(), should.ContainSubstring, "the first part is shown")
	f.So(f.broker.MessageCount("orders.ship.parked"), should.Equal, 1)
}

func (f *HostileFixture) TestAPageHoldsAtMostPageSizeMessages() {
	f.start(Options.PageSize(10))
	f.setAside("orders.ship.dlq", "m", 300, func(int) string { return "boom" })
	body := f.browser.get("/queues/orders.ship.dlq").Body.String()
	f.So(strings.Count(body, `type="checkbox" name="id"`), should.Equal, 0) // read-only: no selection
	f.So(strings.Count(body, `/messages/m`), should.Equal, 10)
	f.So(body, should.ContainSubstring, `href="?page=2#messages"`)
	second := f.browser.get("/queues/orders.ship.dlq?page=2").Body.String()
	f.So(second, should.ContainSubstring, ">m10<")
	f.So(second, should.NotContainSubstring, ">m9<")
}

func (f *HostileFixture) TestWithAnAccessTokenNothingIsServedWithoutIt() {
	f.start(Options.AccessToken("a-long-enough-access-token"))
	w := f.browser.get("/")
	f.So(w.Code, should.Equal, http.StatusUnauthorized)
	f.So(w.Body.String(), should.NotContainSubstring, "orders.ship")
	f.So(f.browser.get("/?token=wrong").Code, should.Equal, http.StatusUnauthorized)

	w = f.browser.get("/queues/orders.ship.dlq?token=a-long-enough-access-token&page=2")
	f.So(w.Code, should.Equal, http.StatusSeeOther)
	f.So(w.Header().Get("Location"), should.Equal, "/queues/orders.ship.dlq?page=2")
	f.So(f.browser.cookies[tokenCookie].HttpOnly, should.BeTrue)
	f.So(f.browser.get("/").Code, should.Equal, http.StatusOK) // the cookie carries it now

	bearer := httptest.NewRequest(http.MethodGet, "/", nil)
	bearer.Header.Set("Authorization", "Bearer a-long-enough-access-token")
	recorder := httptest.NewRecorder()
	f.console.ServeHTTP(recorder, bearer)
	f.So(recorder.Code, should.Equal, http.StatusOK)
}

func (f *HostileFixture) TestAPasswordInAnErrorNeverReachesThePage() {
	const secret = "amqp://ops:Wh1sper%23Pass@broker.internal:5672/"
	f.broker = nil
	f.console = New(Options.Connector(failing{fmt.Errorf("dial %s: connection refused", secret)}), Options.Queues("orders.ship"),
		Options.Redact(secret), Options.Logger(quiet()))
	f.browser = newBrowser(f.T(), f.console)
	for _, path := range []string{"/", "/queues/orders.ship.dlq", "/queues/orders.ship.dlq/messages/x"} {
		body := f.browser.get(path).Body.String()
		f.So(body, should.ContainSubstring, "connection refused")
		f.So(body, should.NotContainSubstring, "Wh1sper")
	}
}

func (f *HostileFixture) TestASampleThatLostTheBrokerIsWarnedWithoutItsPassword() {
	const secret = "amqp://ops:Wh1sper%23Pass@broker.internal:5672/"
	f.broker = nil
	var logged bytes.Buffer // read once Close has stopped every writer
	f.console = New(Options.Connector(failing{fmt.Errorf("dial %s: %w", secret, syscall.ECONNRESET)}), Options.Queues("orders.ship"),
		Options.Redact(secret), Options.Logger(slog.New(slog.NewTextHandler(&logged, nil))))
	f.So(newBrowser(f.T(), f.console).get("/").Code, should.Equal, http.StatusOK)
	f.So(f.console.Close(), should.BeNil)
	f.So(logged.String(), should.EndWith, `level=WARN msg="Console could not sample the queues; check that the broker answers" error="connect to the broker: console: connect: dial amqp://ops:xxxxx@broker.internal:5672/: connection reset by peer"`+"\n")
	f.So(logged.String(), should.NotContainSubstring, "Wh1sper")
}

// failing is a Connector that cannot connect.
type failing struct{ err error }

func (c failing) Connect(context.Context) (messaging.Connection, error) { return nil, c.err }
func (c failing) Close() error                                          { return nil }

// stuck is a Connector whose Connect ignores its context and returns only
// when released, as a broker that accepted the socket and went silent.
type stuck struct{ release chan struct{} }

func (c stuck) Connect(context.Context) (messaging.Connection, error) {
	<-c.release
	return nil, errors.New("released")
}
func (c stuck) Close() error { return nil }

func TestASilentBrokerGivesAPageThatSaysSoWithinItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		c := New(Options.Connector(stuck{release}), Options.Queues("orders.ship"), Options.PageTimeout(2*time.Second), Options.Logger(quiet()))
		started := time.Now()
		w := newBrowser(t, c).get("/queues/orders.ship.dlq")
		if took := time.Since(started); took != 2*time.Second {
			t.Errorf("the page answered after %s, want its 2s bound", took)
		}
		if body := w.Body.String(); w.Code != http.StatusOK || !strings.Contains(body, "did not answer in time (within 2s)") {
			t.Errorf("the page (%d) does not say the broker did not answer:\n%s", w.Code, body)
		}
		close(release)
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
}

func TestAnOverviewThatCouldNotWaitForItsSampleIsWarned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var logged bytes.Buffer // read once Close has stopped every writer
		c := New(Options.Connector(stuck{release}), Options.Queues("orders.ship"), Options.PageTimeout(2*time.Second),
			Options.Logger(slog.New(slog.NewTextHandler(&logged, nil))))
		if w := newBrowser(t, c).get("/"); w.Code != http.StatusOK {
			t.Errorf("the overview answered %d, want 200 with what it has", w.Code)
		}
		close(release)
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		want := `level=WARN msg="Console overview did not wait for a fresh sample; it shows the last one" error="sampling the queues did not answer in time (within 2s)`
		if got := logged.String(); strings.Count(got, "did not wait for a fresh sample") != 1 || !strings.Contains(got, want) {
			t.Errorf("the console logged %q; want one line with %q", got, want)
		}
	})
}
