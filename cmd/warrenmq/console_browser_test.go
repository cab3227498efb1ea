package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/warrenmq/messaging/internal/testenv"
)

// updateScreenshots writes the browser test's screenshots into doc/console,
// where doc/console.md shows them; without it they go to a temporary
// directory.
var updateScreenshots = flag.Bool("console.screenshots", false, "write the console browser test's screenshots into doc/console")

// chromium is the browser the test drives, or "" when none is installed.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	return ""
}

// screen drives one headless Chromium with the flags a closed network
// needs, and saves screenshots.
type screen struct {
	t       *testing.T
	ctx     context.Context
	dialogs atomic.Int32
	shots   string
}

func newScreen(t *testing.T, path string) *screen {
	t.Helper()
	options := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000))
	allocator, cancelAllocator := chromedp.NewExecAllocator(context.Background(), options...)
	ctx, cancel := chromedp.NewContext(allocator)
	t.Cleanup(func() { cancel(); cancelAllocator() })
	s := &screen{t: t, ctx: ctx, shots: t.TempDir()}
	if *updateScreenshots {
		s.shots = filepath.Join("..", "..", "doc", "console")
	}
	err := chromedp.Listen(ctx, func(event any) {
		if _, ok := event.(*page.EventJavascriptDialogOpening); ok {
			s.dialogs.Add(1) // a script of a message ran
		}
	})
	if err != nil {
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	return s
}

// run runs actions, bounded, failing the test with what it was doing.
func (s *screen) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

// until evaluates script (an expression) until it is true, across the
// page's reloads, within limit.
func (s *screen) until(what, script string, limit time.Duration) {
	s.t.Helper()
	s.poll(what, script, limit, false)
}

// reloadUntil is until for a page that does not reload itself: it is
// loaded again before each look.
func (s *screen) reloadUntil(what, script string, limit time.Duration) {
	s.t.Helper()
	s.poll(what, script, limit, true)
}

func (s *screen) poll(what, script string, limit time.Duration, reload bool) {
	s.t.Helper()
	// The service and the console work on their own time: the page is looked
	// at again until it shows what is waited for.
	var err error
	if !testenv.Poll(limit, func() bool {
		if reload {
			s.run("reload", chromedp.Reload())
		}
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		defer cancel()
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool]("(()=>{try{return !!("+script+")}catch(e){return false}})()"))
		return err == nil && ok
	}) {
		body, _ := evaluate[string](s, "document.body ? document.body.innerText : ''")
		s.t.Fatalf("%s: not within %s (%v); the page says:\n%s", what, limit, err, body)
	}
}

// evaluate is the value of a JavaScript expression on the page.
func evaluate[T any](s *screen, expression string) (T, error) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expression))
}

// shot saves the viewport as name.png.
func (s *screen) shot(name string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		s.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(s.shots, name+".png"), png, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// TestTheConsoleInABrowser runs the example service, makes 20 orders fail
// to ship for one cause and 5 for another (the database refuses them), and
// parks a message whose payload is a script. In headless Chromium, the
// console shows the two groups with counts 20 and 5; after the cause of the
// 20 is fixed, the group is replayed from the page (a count, a
// confirmation, the result) and the 20 orders ship, while the 5 stay set
// aside; the script is shown as text and never runs.
func TestTheConsoleInABrowser(t *testing.T) {
	path := chromium()
	if path == "" {
		t.Skip("Chromium is not installed, so the console's browser test cannot run: install Debian's chromium (apt-get install chromium; `make services` does)")
	}
	// A virtual host of its own: the example service that other packages'
	// tests run at the same time consumes the same queue names, and a
	// delivery one of them holds when its test stops comes back (at least
	// once), which would change the counts this test reads.
	amqpURL := testenv.Vhost(t, "console")
	db := testenv.MySQL(t)
	orders := startOrders(t, amqpURL, testenv.MySQLDSN)
	token := word(10)
	itemA, itemB := "lamp-"+token, "chair-"+token
	reasonA, reasonB := "the warehouse "+token+" is closed", "the courier "+token+" refused the parcel"
	t.Cleanup(func() { // what this test set aside, so that runs do not pile up
		discardOurs(t, amqpURL, "orders.ship.dlq", token)
		discardOurs(t, amqpURL, "orders.ship.parked", token)
	})
	fix := refuseShipping(t, db, token, itemA, itemB, reasonA, reasonB)
	idsA := orders.place(t, itemA, 20)
	orders.place(t, itemB, 5)
	scriptID := "script-" + token
	publishScript(t, amqpURL, "orders.ship", scriptID)

	access := word(24)
	base := startConsole(t, "-listen", "127.0.0.1:0", "-actions", "-token", access, "-amqp", amqpURL,
		"-queue", "orders.ship", "-queue", "orders.shipped-log", "-policy", "exponential:5:100ms:2s",
		"-stream", "orders.shipments", "-service", orders.base+"/status", "-management", "none",
		"-dsn", testenv.MySQLDSN, "-table", "Messages", "-checkpoints", "stream_checkpoints")
	s := newScreen(t, path)

	s.run("open the console with its token", chromedp.Navigate(base+"/?token="+access))
	s.until("the overview lists orders.ship.dlq", `document.querySelector('a[href="/queues/orders.ship.dlq"]')`, 10*time.Second)
	rowOf := func(reason string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('tr.group')].find(r => r.querySelector('a.reason').textContent.includes(%q))`, reason)
	}
	s.run("open orders.ship.dlq", chromedp.Navigate(base+"/queues/orders.ship.dlq"))
	s.reloadUntil("the dead-letter queue shows the two groups, 20 and 5",
		rowOf(reasonA)+`.querySelector('.count').textContent === '20' && `+rowOf(reasonB)+`.querySelector('.count').textContent === '5'`, 90*time.Second)
	s.shot("dead-letters")

	fix() // the warehouse opens again; the courier still refuses
	groupLink, err := evaluate[string](s, rowOf(reasonA)+`.querySelector('a.reason').getAttribute('href')`)
	if err != nil {
		t.Fatalf("find the group's page: %v", err)
	}
	s.run("open the group", chromedp.Navigate(base+groupLink))
	s.until("the group's page counts 20", `document.getElementById('group-count').textContent.startsWith('20 ')`, 10*time.Second)
	s.run("replay the group", chromedp.Click(chromedp.CSS("#replay-group")))
	s.until("the count asks to confirm 20", `document.getElementById('would-move').textContent === '20'`, 30*time.Second)
	s.shot("replay-confirm")
	s.run("confirm", chromedp.Click(chromedp.CSS("#confirm")))
	s.until("the replay moved 20", `document.getElementById('result').textContent.startsWith('moved 20, ')`, 30*time.Second)
	s.shot("replay-result")
	orders.waitShipped(t, idsA, 60*time.Second)

	s.run("back to orders.ship.dlq", chromedp.Navigate(base+"/queues/orders.ship.dlq"))
	s.reloadUntil("the 5 are still set aside and the 20 are gone",
		rowOf(reasonB)+`.querySelector('.count').textContent === '5' && !`+rowOf(reasonA), 10*time.Second)

	s.run("open the parked script", chromedp.Navigate(base+"/queues/orders.ship.parked/messages/"+scriptID))
	s.until("the script is shown as text", `document.getElementById('payload').textContent === '<script>alert(1)</script>'`, 30*time.Second)
	scripts, err := evaluate[int](s, `document.querySelectorAll('script').length`)
	if err != nil {
		t.Fatal(err)
	}
	s.shot("script-as-text")
	if scripts != 0 || s.dialogs.Load() != 0 {
		t.Fatalf("the message page holds %d script element(s) and opened %d dialog(s); the payload must be text", scripts, s.dialogs.Load())
	}
	s.run("open the overview", chromedp.Navigate(base+"/"))
	s.until("the overview", `document.querySelector('table.queues')`, 10*time.Second)
	s.shot("overview")
	s.run("open the health page", chromedp.Navigate(base+"/health"))
	s.until("the service's report", `document.body.innerText.includes('subscriptions')`, 10*time.Second)
	s.shot("health")
}
