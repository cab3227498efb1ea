package console

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/options"
	"github.com/warrenmq/messaging/retrypolicy"
)

// Options is the entry point for configuring New: console.Options.X(...).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option. (It is
// exported so that go doc lists them.)
type OptionSet struct{}

// Option configures New.
type Option func(*config)

// The defaults of the options that bound what a page does.
const (
	DefaultSampleInterval = 10 * time.Second
	DefaultWindow         = 15 * time.Minute
	DefaultPageTimeout    = 3 * time.Second
	DefaultScanBudget     = 400 * time.Millisecond
	DefaultScanLimit      = 5000
	DefaultPageSize       = 50
	DefaultCountTimeout   = 2 * time.Minute
	DefaultCensusLimit    = 1_000_000
	DefaultCensusTimeout  = 5 * time.Minute
)

type config struct {
	connector      messaging.Connector
	queues         []string
	policy         retrypolicy.Policy
	schedule       bool
	streams        []string
	management     management
	outboxes       []outboxTable
	checkpoints    func(context.Context) ([]Checkpoint, error)
	services       []string
	actions        bool
	token          string
	mount          string
	secrets        []string
	sampleInterval time.Duration
	window         time.Duration
	pageTimeout    time.Duration
	scanBudget     time.Duration
	scanLimit      int
	pageSize       int
	countTimeout   time.Duration
	censusLimit    int
	censusTimeout  time.Duration
	logger         *slog.Logger
}

func newConfig(opts []Option) config {
	c := config{policy: retrypolicy.None()}
	options.Apply(&c, opts)
	options.Positive(&c.sampleInterval, DefaultSampleInterval)
	options.Positive(&c.window, DefaultWindow)
	options.Positive(&c.pageTimeout, DefaultPageTimeout)
	options.Positive(&c.scanBudget, DefaultScanBudget)
	options.Positive(&c.countTimeout, DefaultCountTimeout)
	options.Positive(&c.censusTimeout, DefaultCensusTimeout)
	options.Positive(&c.scanLimit, DefaultScanLimit)
	if c.pageSize <= 0 || c.pageSize > 500 {
		c.pageSize = DefaultPageSize
	}
	options.Positive(&c.censusLimit, DefaultCensusLimit)
	c.mount = "/" + strings.Trim(c.mount, "/")
	if c.mount != "/" {
		c.mount += "/"
	}
	options.Default(&c.logger, slog.Default())
	return c
}

// Connector is the raw transport (rabbitmq.New, memory.New) the console
// inspects, browses and replays through; required. Give it the transport, not
// a serialization decorator: set-aside bodies are shown and moved as bytes.
// With RabbitMQ, a short broker timeout (rabbitmq.Options.BrokerTimeout, the
// CLI uses 5 s) keeps a slow broker from holding a page's call for long.
func (OptionSet) Connector(connector messaging.Connector) Option {
	return func(c *config) { c.connector = connector }
}

// Queues names the subscription queues to watch; the console adds what the
// naming implies for each: {queue}.dlq, {queue}.parked and the retry rungs of
// Policy. Default: none (with Management, what the broker lists).
func (OptionSet) Queues(names ...string) Option {
	return func(c *config) { c.queues = append(c.queues, names...) }
}

// Policy is the subscriptions' retry budget, whose broker rungs
// ({queue}.retry.{delay}) the console watches. Default retrypolicy.None(): no
// rungs.
func (OptionSet) Policy(policy retrypolicy.Policy) Option {
	return func(c *config) { c.policy = policy }
}

// Schedule watches the scheduler's ladder (acemq.schedule.1h ... .1s),
// acemq.schedule.due and its dead-letter queue. Default false.
func (OptionSet) Schedule(watch bool) Option { return func(c *config) { c.schedule = watch } }

// Streams names stream queues to watch, with their {stream}.dlq and
// {stream}.parked; the health page shows their lengths beside the
// checkpoints. Default: none.
func (OptionSet) Streams(names ...string) Option {
	return func(c *config) { c.streams = append(c.streams, names...) }
}

// Management is the base address of RabbitMQ's management HTTP API
// (http://user:password@host:15672) and the virtual host to list. When it
// answers, the console lists every queue of the vhost that follows the
// naming, besides the ones it was given; when it does not, the page says so
// and the console goes on with AMQP alone. Default: none.
func (OptionSet) Management(address, vhost string) Option {
	return func(c *config) { c.management = management{address: address, vhost: vhost} }
}

// Outbox adds an outbox table under name: its pending rows, its retired rows,
// and (with Actions) releasing them. sqlmq.NewAdmin returns what it needs.
// Default: none.
func (OptionSet) Outbox(name string, admin OutboxAdmin) Option {
	return func(c *config) {
		if admin != nil {
			c.outboxes = append(c.outboxes, outboxTable{name: name, admin: admin})
		}
	}
}

// Checkpoints is where the health page reads the streams' known checkpoints
// (a projection's saved next offset); it must honour its context. Default:
// none.
func (OptionSet) Checkpoints(source func(ctx context.Context) ([]Checkpoint, error)) Option {
	return func(c *config) { c.checkpoints = source }
}

// Services adds the /status addresses of services whose reports the health
// page shows. Default: none.
func (OptionSet) Services(addresses ...string) Option {
	return func(c *config) { c.services = append(c.services, addresses...) }
}

// Actions enables what changes something: replaying set-aside messages,
// releasing retired outbox rows, counting a queue's reasons in full. Every
// action is a POST carrying the page's CSRF token. Default false: read-only.
func (OptionSet) Actions(enabled bool) Option { return func(c *config) { c.actions = enabled } }

// AccessToken makes every request carry token: once as ?token=... (the
// console then keeps it in an HttpOnly cookie), or as an Authorization:
// Bearer header. Default: none, for a console mounted behind the service's
// own authentication or listening on loopback only.
func (OptionSet) AccessToken(token string) Option { return func(c *config) { c.token = token } }

// MountPath is the path the handler is served under (/ops/console/), so its
// links lead back to it; strip nothing before it. Default "/".
func (OptionSet) MountPath(path string) Option { return func(c *config) { c.mount = path } }

// Redact names addresses (the broker's, a database DSN, the management API's)
// whose passwords never appear on a page, in a response or a log line; every
// text the console shows passes through internal/redact with them. Default:
// none, and URL and DSN passwords are masked anyway.
func (OptionSet) Redact(addresses ...string) Option {
	return func(c *config) { c.secrets = append(c.secrets, addresses...) }
}

// SampleInterval is how often Listen samples every queue's depth for the
// charts. Default 10 s.
func (OptionSet) SampleInterval(interval time.Duration) Option {
	return func(c *config) { c.sampleInterval = interval }
}

// Window is how much history the charts keep. Default 15 minutes.
func (OptionSet) Window(window time.Duration) Option { return func(c *config) { c.window = window } }

// PageTimeout bounds the broker and database calls of one page: past it the
// page says what did not answer instead of waiting. Default 3 s.
func (OptionSet) PageTimeout(timeout time.Duration) Option {
	return func(c *config) { c.pageTimeout = timeout }
}

// ScanBudget bounds how long a page reads a set-aside queue to group its
// reasons; the page says how many messages the groups cover. Default 400 ms.
func (OptionSet) ScanBudget(budget time.Duration) Option {
	return func(c *config) { c.scanBudget = budget }
}

// ScanLimit bounds how many messages a page reads to group reasons or find a
// page of a group. Default 5,000.
func (OptionSet) ScanLimit(limit int) Option { return func(c *config) { c.scanLimit = limit } }

// PageSize is how many messages a page lists, at most 500. Default 50.
func (OptionSet) PageSize(size int) Option { return func(c *config) { c.pageSize = size } }

// CountTimeout bounds a replay's dry run (the count shown before the
// confirmation). Default 2 minutes.
func (OptionSet) CountTimeout(timeout time.Duration) Option {
	return func(c *config) { c.countTimeout = timeout }
}

// CensusLimit bounds how many messages a full count of a queue's reasons
// reads. Default 1,000,000.
func (OptionSet) CensusLimit(limit int) Option { return func(c *config) { c.censusLimit = limit } }

// CensusTimeout bounds a full count of a queue's reasons. Default 5 minutes.
func (OptionSet) CensusTimeout(timeout time.Duration) Option {
	return func(c *config) { c.censusTimeout = timeout }
}

// Logger receives the console's lines: every action taken (INFO), a sample
// that failed (WARN). Default slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }
