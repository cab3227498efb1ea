package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging/console"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/sqlmq"
)

const consoleUsage = `usage:
  warrenmq console [-listen 127.0.0.1:7070] [-token TOKEN] [-actions] [-amqp URL] [-timeout 5s]
                   [-queue QUEUE]... [-policy exponential:6:10s:5m] [-broker-wait 30s] [-schedule]
                   [-stream STREAM]... [-management auto|none|URL] [-service URL]...
                   [-driver mysql] [-dsn DSN] [-table Messages]... [-checkpoints TABLE] [QUEUE ...]

Serves the operator console: the queues (each named QUEUE with its .dlq,
.parked and retry rungs, the scheduler's with -schedule, the streams), the
set-aside messages grouped by reason, replay (with -actions), the outbox
tables of -dsn, and the /status of each -service. Read-only unless
-actions. On an address other than loopback it needs an access token: given
with -token or WARRENMQ_CONSOLE_TOKEN, or made up and printed once at start.
It runs until interrupted.`

// minTokenLength is the shortest access token the console accepts.
const minTokenLength = 16

// repeated collects a flag given more than once.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// consoleFlags are warrenmq console's flags.
type consoleFlags struct {
	listen, token, address, policy, management, driver, dsn, checkpoints string
	timeout, brokerWait                                                  time.Duration
	actions, schedule                                                    bool
	queues, streams, services, tables                                    repeated
}

func parseConsoleFlags(args []string, stdout, stderr io.Writer) (consoleFlags, error) {
	var f consoleFlags
	set := flag.NewFlagSet("warrenmq console", flag.ContinueOnError)
	set.SetOutput(stderr)
	set.StringVar(&f.listen, "listen", "127.0.0.1:7070", "address to serve the console on")
	set.StringVar(&f.token, "token", os.Getenv("WARRENMQ_CONSOLE_TOKEN"), "access token every request must carry (env WARRENMQ_CONSOLE_TOKEN)")
	set.BoolVar(&f.actions, "actions", false, "enable replay, release and full counts (default read-only)")
	set.StringVar(&f.address, "amqp", envOr("WARRENMQ_AMQP", defaultAddress), "RabbitMQ address")
	set.DurationVar(&f.timeout, "timeout", 5*time.Second, "bound of each broker call")
	set.Var(&f.queues, "queue", "a subscription queue to watch (repeatable; also as arguments)")
	set.StringVar(&f.policy, "policy", "", "the subscriptions' retry policy, to watch its rungs: fixed:N:DELAY or exponential:N:INITIAL:MAX")
	set.DurationVar(&f.brokerWait, "broker-wait", retrypolicy.DefaultBrokerWaitThreshold, "the policy's broker-wait threshold")
	set.BoolVar(&f.schedule, "schedule", false, "also watch the scheduler's rungs and acemq.schedule.due")
	set.Var(&f.streams, "stream", "a stream queue to watch (repeatable)")
	set.StringVar(&f.management, "management", "auto", "the management API: auto (http://host:15672 of -amqp, when it answers), none, or its address")
	set.Var(&f.services, "service", "a service's /status address (repeatable)")
	set.StringVar(&f.driver, "driver", envOr("WARRENMQ_DRIVER", "mysql"), "database/sql driver of -dsn: mysql, pgx or sqlite")
	set.StringVar(&f.dsn, "dsn", os.Getenv("WARRENMQ_DSN"), "the outbox's database (no outbox page without it)")
	set.Var(&f.tables, "table", "an outbox table in -dsn (repeatable; default Messages)")
	set.StringVar(&f.checkpoints, "checkpoints", "", "a table of -dsn holding the streams' checkpoints (columns name, next_offset)")
	if err := parseFlags(set, args, consoleUsage, stdout, stderr); err != nil {
		return f, err
	}
	f.queues = append(f.queues, set.Args()...)
	return f, nil
}

// accessToken is the token the console will ask for: the one given, one
// made up when the console listens beyond loopback, or none. made reports
// one made up, which is printed once.
func accessToken(f consoleFlags) (token string, made bool, err error) {
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return "", false, fmt.Errorf("%w: -listen %q is not host:port", errUsage, f.listen)
	}
	switch {
	case f.token != "" && len(f.token) < minTokenLength:
		return "", false, fmt.Errorf("%w: the access token is %d characters; give one of at least %d, or none on loopback", errUsage, len(f.token), minTokenLength)
	case f.token != "":
		return f.token, false, nil
	case loopback(host):
		return "", false, nil
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b), true, nil
}

// loopback reports a host name or address that only this machine reaches.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// onlyLoopbackHosts refuses a request whose Host is not a loopback name: a
// console without a token trusts whoever reaches it, and a web page of
// another site can reach 127.0.0.1 under its own name (DNS rebinding).
func onlyLoopbackHosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if !loopback(strings.Trim(host, "[]")) {
			http.Error(w, "this console answers only to loopback names (127.0.0.1, localhost); give it -token to serve other names", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func runConsole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseConsoleFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	token, made, err := accessToken(f)
	if err != nil {
		return err
	}
	options, closeAll, err := consoleOptions(f, stderr)
	if err != nil {
		return err
	}
	defer closeAll()
	options = append(options, console.Options.AccessToken(token))
	listener, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another console running? pass -listen to choose another address)", f.listen, err)
	}
	c := console.New(options...)
	var handler http.Handler = c
	if token == "" {
		handler = onlyLoopbackHosts(c)
	}
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: time.Minute, IdleTimeout: time.Minute,
		ErrorLog: log.New(stderr, "console: ", 0)} // through the redacting writer, as every line is
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	listening := make(chan struct{})
	served := make(chan error, 1)
	go func() { defer close(listening); c.Listen() }()
	go func() { served <- server.Serve(listener) }()
	mode := "read-only"
	if f.actions {
		mode = "actions enabled"
	}
	printServing(stdout, listener.Addr().String(), mode, token, made)
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = server.Shutdown(shutdown)
	closeErr := c.Close()
	<-listening
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("the console's server stopped: %w", err)
	}
	return closeErr
}

// printServing says where the console is, with the token once when it was
// made up here.
func printServing(stdout io.Writer, address, mode, token string, made bool) {
	base := "http://" + address + "/"
	switch {
	case made:
		fmt.Fprintf(stdout, "console: serving %s (%s); open %s?token=%s\n(the access token is shown once; give -token or WARRENMQ_CONSOLE_TOKEN to keep one)\n", base, mode, base, url.QueryEscape(token))
	case token != "":
		fmt.Fprintf(stdout, "console: serving %s (%s); open it with ?token= and your access token\n", base, mode)
	default:
		fmt.Fprintf(stdout, "console: serving %s (%s)\n", base, mode)
	}
}

// consoleOptions turns the flags into the console's options, opening the
// transport and the database they name; closeAll closes them.
func consoleOptions(f consoleFlags, stderr io.Writer) ([]console.Option, func(), error) {
	policy, err := parsePolicy(f.policy)
	if err != nil {
		return nil, nil, err
	}
	transport, err := transportAt(f.address, f.timeout, stderr)
	if err != nil {
		return nil, nil, err
	}
	closers := []io.Closer{transport}
	closeAll := func() {
		for _, c := range closers {
			_ = c.Close()
		}
	}
	secrets := []string{f.address, f.dsn, f.management}
	secrets = append(secrets, f.services...)
	options := []console.Option{
		console.Options.Connector(transport), console.Options.Queues(f.queues...),
		console.Options.Policy(policy.WaitInBrokerFrom(f.brokerWait)), console.Options.Schedule(f.schedule),
		console.Options.Streams(f.streams...), console.Options.Services(f.services...),
		console.Options.Actions(f.actions), console.Options.Redact(secrets...),
		console.Options.Logger(slog.New(slog.NewTextHandler(stderr, nil))), // INFO: every action taken is logged
	}
	if management, vhost, ok := managementOf(f); ok {
		options = append(options, console.Options.Management(management, vhost))
	}
	if f.dsn != "" {
		db, more, err := outboxOptions(f)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		closers = append(closers, db)
		options = append(options, more...)
	}
	return options, closeAll, nil
}

// managementOf is the management API's address and the vhost to list:
// with auto, port 15672 of -amqp's host with its user.
func managementOf(f consoleFlags) (address, vhost string, ok bool) {
	uri, err := amqp.ParseURI(f.address)
	if err != nil || f.management == "none" || f.management == "" {
		return "", "", false
	}
	if f.management != "auto" {
		return f.management, uri.Vhost, true
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(uri.Host, "15672"), User: url.UserPassword(uri.Username, uri.Password)}
	return u.String(), uri.Vhost, true
}

// tableName is what -table and -checkpoints accept: a plain SQL identifier.
var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// outboxOptions opens -dsn and returns an outbox option per -table and the
// checkpoints of -checkpoints.
func outboxOptions(f consoleFlags) (*sql.DB, []console.Option, error) {
	dialect, err := dialectFor(f.driver)
	if err != nil {
		return nil, nil, err
	}
	tables := f.tables
	if len(tables) == 0 {
		tables = repeated{"Messages"}
	}
	for _, t := range append(tables, f.checkpoints) {
		if t != "" && !tableName.MatchString(t) {
			return nil, nil, fmt.Errorf("%w: %q is not a table name", errUsage, t)
		}
	}
	db, err := sql.Open(f.driver, f.dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open the %s database at %s: %w", f.driver, redact.Address(f.dsn), err)
	}
	var options []console.Option
	for _, t := range tables {
		options = append(options, console.Options.Outbox(t, sqlmq.NewAdmin(db, sqlmq.Options.Dialect(dialect), sqlmq.Options.Table(t))))
	}
	if f.checkpoints != "" {
		query := "SELECT name, next_offset FROM " + f.checkpoints + " ORDER BY name LIMIT 200"
		options = append(options, console.Options.Checkpoints(func(ctx context.Context) ([]console.Checkpoint, error) {
			return readCheckpoints(ctx, db, query)
		}))
	}
	return db, options, nil
}

func readCheckpoints(ctx context.Context, db *sql.DB, query string) ([]console.Checkpoint, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("read the checkpoints: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var list []console.Checkpoint
	for rows.Next() {
		var c console.Checkpoint
		if err := rows.Scan(&c.Name, &c.NextOffset); err != nil {
			return nil, fmt.Errorf("read a checkpoint: %w", err)
		}
		list = append(list, c)
	}
	return list, rows.Err()
}
