package console

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/internal/redial"
)

// closeLimit bounds Close: how long it waits for running reads and jobs to
// return what they hold and stop.
const closeLimit = 10 * time.Second

// errNoConnector is what every broker call says when Options.Connector was
// not given.
var errNoConnector = errors.New("console: no transport was given; pass console.Options.Connector(rabbitmq.New(...))")

// errSlow marks a call that did not answer within the page's bound.
var errSlow = errors.New("did not answer in time")

// Console is the operator's web page over a service's queues, set-aside
// messages, outbox tables and health. It is an http.Handler; Listen runs the
// sampler behind the charts until Close. Safe for concurrent use.
type Console struct {
	config  config
	link    *redial.Link
	key     []byte // signs the CSRF tokens
	handler http.Handler
	history *history
	jobs    *jobs

	life context.Context
	stop context.CancelFunc
	work sync.WaitGroup // every goroutine the console started: reads, jobs, the sampler
	once sync.Once
}

// New returns a console over the configured transport. It dials nothing
// until a page or the sampler needs the broker.
func New(options ...Option) *Console {
	c := &Console{config: newConfig(options), key: make([]byte, 32)}
	_, _ = rand.Read(c.key) // crypto/rand.Read never fails
	c.life, c.stop = context.WithCancel(context.Background())
	if c.config.connector != nil {
		c.link = redial.New(c.config.connector, "console")
	}
	c.history = newHistory(c.config)
	c.jobs = newJobs()
	c.handler = c.routes()
	return c
}

// ServeHTTP serves the console's pages under its MountPath.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.handler.ServeHTTP(w, r) }

// Listen samples every watched queue's depth each SampleInterval, for the
// charts, until Close; it returns when Close is called. Without it the
// console samples when a page is opened.
func (c *Console) Listen() {
	c.work.Add(1)
	defer c.work.Done()
	ticker := time.NewTicker(c.config.sampleInterval)
	defer ticker.Stop()
	for {
		c.sample(c.life)
		select {
		case <-c.life.Done():
			return
		case <-ticker.C:
		}
	}
}

// Close stops Listen and every job (a replay that is stopped returns what it
// holds to its queue), waits for them within a bound, and closes the
// console's connection. It returns messaging.ErrShutdownForced when
// something did not stop in time.
func (c *Console) Close() error {
	var err error
	c.once.Do(func() {
		c.stop()
		done := make(chan struct{})
		go func() { c.work.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(closeLimit):
			err = fmt.Errorf("console: reads or jobs still running %s after Close: %w", closeLimit, messaging.ErrShutdownForced)
		}
		if c.link != nil {
			_ = c.link.Close()
		}
	})
	return err
}

// redact masks every password the console was told of, and any URL or DSN
// password, in text.
func (c *Console) redact(text string) string { return redact.Text(text, c.config.secrets...) }

// redactErr is err's text, redacted, for a page.
func (c *Console) redactErr(err error) string {
	if err == nil {
		return ""
	}
	return c.redact(err.Error())
}

// await runs f in a goroutine the console owns and returns its result, or,
// when ctx ends first, an error saying what did not answer in time. f is
// given ctx, so it stops soon after; what it returns then is dropped. A
// page stays bounded whatever the transport does with a call.
func await[T any](c *Console, ctx context.Context, what string, f func(context.Context) (T, error)) (T, error) {
	type answer struct {
		value T
		err   error
	}
	done := make(chan answer, 1)
	c.work.Add(1)
	go func() {
		defer c.work.Done()
		value, err := f(ctx)
		done <- answer{value, err}
	}()
	select {
	case a := <-done:
		return a.value, a.err
	case <-ctx.Done():
		var zero T
		if c.life.Err() != nil {
			return zero, fmt.Errorf("%s: the console is closing", what)
		}
		return zero, fmt.Errorf("%s %w (within %s): the broker or database may be overloaded or unreachable; the page shows what it has, reload to try again: %w",
			what, errSlow, c.config.pageTimeout, context.Cause(ctx))
	}
}

// pageContext bounds a page's calls by PageTimeout, and ends with the
// request or the console.
func (c *Console) pageContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), c.config.pageTimeout)
	stop := context.AfterFunc(c.life, cancel)
	return ctx, func() { stop(); cancel() }
}

// connection returns the kept connection, or why there is none.
func (c *Console) connection(ctx context.Context) (messaging.Connection, error) {
	if c.link == nil {
		return nil, errNoConnector
	}
	conn, err := c.link.Connection(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to the broker: %w", err)
	}
	return conn, nil
}

// declarer is the kept connection's Declarer.
func (c *Console) declarer(ctx context.Context) (messaging.Declarer, messaging.Connection, error) {
	conn, err := c.connection(ctx)
	if err != nil {
		return nil, nil, err
	}
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		return nil, nil, errors.New("the transport's connection cannot inspect queues (no messaging.Declarer); give the console the raw transport")
	}
	return declarer, conn, nil
}

// inspect reports one queue's depth and consumers.
func (c *Console) inspect(ctx context.Context, queue string) (messaging.QueueState, error) {
	declarer, conn, err := c.declarer(ctx)
	if err != nil {
		return messaging.QueueState{}, err
	}
	state, err := declarer.InspectQueue(ctx, queue)
	if err != nil {
		c.dropIfLost(conn, err)
	}
	return state, err
}
