// Command warrenmq is the operator's tool for a service built on this library:
// it lists how many messages wait in each subscription's dead-letter, parking
// and retry queues and moves them back (replay); it lists what the outbox
// still owes the broker (oldest rows first, with their failed attempts and
// last error), reads and releases the retired rows, and prints the outbox
// table's DDL for migration tools; it runs the broker health probe once,
// prints the topology a subscription set declares and checks it against a
// live broker, tails stream queues, and serves the operator console.
//
//	warrenmq queues          [-amqp URL] [-policy P] [-schedule] [-json] QUEUE ...
//	warrenmq replay          [-amqp URL] [filters] [-limit N] [-dry-run] [-each] [-json] QUEUE
//	warrenmq outbox pending  [-limit 20] [-driver mysql] [-dsn DSN] [-table Messages] [-json]
//	warrenmq outbox retired  [-limit 50] [outbox flags] [-json]
//	warrenmq outbox release  [outbox flags] [-all] [-json] [ID ...]
//	warrenmq outbox schema   [-dialect mysql|postgres|sqlite] [-table Messages]
//	warrenmq status          [-amqp URL] [-timeout 10s] [-json]
//	warrenmq topology plan   [-replication] [-dead-letters=true] [-json] QUEUE[=EXCHANGE[:KIND:KEY],...] ...
//	warrenmq topology check  [-amqp URL] [plan flags] QUEUE[=...] ...
//	warrenmq schedule topology [-check] [-amqp URL] [-json]
//	warrenmq stream tail     [-amqp URL] [-from next] [-limit N] [-for D] [-json] STREAM
//	warrenmq console         [-listen 127.0.0.1:7070] [-actions] [-queue Q]... (a web page)
//	warrenmq help [VERB]     (or VERB -h: the verb's usage and flags, on stdout)
//
// Long operations (replay, outbox release) report their progress on stderr:
// a bar on a terminal, a line every few seconds otherwise, then their totals.
//
// Nothing it prints carries a password: every line, on stdout and stderr,
// errors included, passes through internal/redact with every address the
// command was given (flags and environment).
//
// Exit status: 0 on success (help included), 1 when the operation failed, 2
// on bad usage, 3 when queues finds messages waiting in a dead-letter or
// parking queue, 4 when something named does not exist (a queue, a stream, an
// outbox row). doc/operations.md has the runbook and every -json field.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	amqp "github.com/rabbitmq/amqp091-go"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/status"
)

// The exit statuses, as the usage text and doc/operations.md document them.
const (
	exitFailed    = 1
	exitUsage     = 2
	exitAttention = 3
	exitNotFound  = 4
)

var (
	// errUsage marks a mistake in how the command was called (exit status 2).
	errUsage = errors.New("usage")
	// errNotFound marks a command that named something that does not exist:
	// a queue, a stream, an outbox row (exit status 4).
	errNotFound = errors.New("not found")
	// errHelp is what a verb returns once it printed its usage because it
	// was asked to (-h, -help, warrenmq help VERB): run returns nil.
	errHelp = errors.New("help printed")
)

func main() {
	// An interrupt ends the context: a replay stops between messages (what
	// it holds goes back) and prints its totals; a tail prints what it read.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	// run's error is redacted already; printing it cannot leak.
	code := exitCode(err)
	switch code {
	case 0:
	case exitUsage:
		fmt.Fprintln(os.Stderr, err)
	default:
		fmt.Fprintln(os.Stderr, "warrenmq:", err)
	}
	os.Exit(code)
}

// exitCode is the exit status for run's error: a usage mistake before a
// missing name, a missing name before messages found waiting.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, errNotFound):
		return exitNotFound
	case errors.Is(err, errAttention):
		return exitAttention
	}
	return exitFailed
}

const usage = `usage:
  warrenmq queues          [-amqp URL] [-policy exponential:6:10s:5m] [-schedule] [-json] QUEUE ...
  warrenmq replay          [-amqp URL] [-exchange X] [-key K] [-type T] [-error TEXT] [-header N=V]
                           [-limit N] [-deadline D] [-keep-attempts] [-dry-run] [-each] [-json] QUEUE
  warrenmq outbox pending  [-limit 20] [-driver mysql|pgx|sqlite] [-dsn DSN] [-table Messages] [-json]
  warrenmq outbox retired  [-limit 50] [outbox flags] [-json]
  warrenmq outbox release  [outbox flags] [-all] [-json] [ID ...]
  warrenmq outbox schema   [-dialect mysql|postgres|sqlite] [-table Messages]
  warrenmq status          [-amqp URL] [-timeout 10s] [-json]
  warrenmq topology plan   [-replication] [-dead-letters=true] [-json] QUEUE[=EXCHANGE[:KIND:KEY],...] ...
  warrenmq topology check  [-amqp URL] [-timeout 10s] [plan flags] QUEUE[=...] ...
  warrenmq schedule topology [-check] [-amqp URL] [-timeout 10s] [-json]
  warrenmq stream tail     [-amqp URL] [-from next|first|last|OFFSET|TIME|AGO] [-limit N] [-for D] [-json] STREAM
  warrenmq console         [-listen 127.0.0.1:7070] [-token T] [-actions] [-amqp URL] [-queue Q]... [-dsn DSN] ...
  warrenmq help [VERB]     the verb's usage and flags (also VERB -h)

Every verb that reaches the broker takes -amqp URL (or WARRENMQ_AMQP), every
outbox verb -dsn DSN (or WARRENMQ_DSN); nothing printed carries a password.
replay and outbox release show their progress on stderr (-progress).

Exit status: 0 success; 1 the operation failed; 2 bad usage; 3 messages wait
in a dead-letter or parking queue (queues); 4 something named does not exist
(a queue, a stream, an outbox row).`

// parseFlags parses args into set. Asked for help (-h, -help), it prints the
// verb's usage and flags to stdout and returns errHelp (exit status 0); on a
// bad flag it prints them to stderr and returns a usage error (exit status 2).
func parseFlags(set *flag.FlagSet, args []string, verbUsage string, stdout, stderr io.Writer) error {
	set.SetOutput(io.Discard)
	set.Usage = func() {}
	err := set.Parse(args)
	switch {
	case err == nil:
		set.SetOutput(stderr)
		return nil
	case errors.Is(err, flag.ErrHelp):
		printUsage(set, verbUsage, stdout)
		return errHelp
	}
	printUsage(set, verbUsage, stderr)
	return fmt.Errorf("%w: %v", errUsage, err)
}

// printUsage writes a verb's usage text and its flags with their defaults.
func printUsage(set *flag.FlagSet, verbUsage string, w io.Writer) {
	fmt.Fprintln(w, verbUsage)
	fmt.Fprintln(w, "\nflags:")
	set.SetOutput(w)
	set.PrintDefaults()
}

// isHelp reports whether an argument asks for usage.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// addressVariables are the environment variables that may hold an address
// with a password.
var addressVariables = []string{"WARRENMQ_DSN", "WARRENMQ_AMQP"}

// run runs the command. Everything it writes, and the error it returns, has
// the password of every address it was given masked: the arguments and the
// address variables are all treated as addresses, so nothing depends on which
// flag held one or on the address parsing.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	secrets := append([]string(nil), args...)
	for _, name := range addressVariables {
		secrets = append(secrets, os.Getenv(name))
	}
	stdout, stderr = redacting{stdout, secrets}, redacting{stderr, secrets}
	err := dispatch(ctx, args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, errHelp):
		return nil
	}
	return redact.WithText(err, mask(err.Error(), secrets))
}

// mask is redact.Text, and then also masks the pieces of each password that a
// parser quotes when it stops at a reserved character: url.Parse, for one,
// reports "amqp://guest:s3cr" for a password "s3cr#t". Pieces shorter than
// minPiece are left: they would mask ordinary words and reveal little.
func mask(text string, secrets []string) string {
	text = redact.Text(text, secrets...)
	const minPiece = 4
	for _, secret := range secrets {
		password := redact.Password(secret)
		for i := 0; i < len(password); i++ {
			if !strings.ContainsRune("#@:/?%[]", rune(password[i])) {
				continue
			}
			for _, piece := range []string{password[:i], password[i+1:]} {
				if len(piece) >= minPiece {
					text = strings.ReplaceAll(text, piece, redact.Mask)
				}
			}
		}
	}
	return text
}

// redacting masks passwords in everything written through it.
type redacting struct {
	w       io.Writer
	secrets []string
}

func (r redacting) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, mask(string(p), r.secrets)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command\n%s", errUsage, usage)
	}
	switch args[0] {
	case "outbox":
		if len(args) < 2 {
			return fmt.Errorf("%w: outbox needs pending, retired, release or schema\n%s", errUsage, outboxUsage)
		}
		return runOutbox(ctx, args[1], args[2:], stdout, stderr)
	case "status":
		return runStatus(ctx, args[1:], stdout, stderr)
	case "topology":
		if len(args) < 2 {
			return fmt.Errorf("%w: topology needs plan or check\n%s", errUsage, topologyUsage)
		}
		return runTopology(ctx, args[1], args[2:], stdout, stderr)
	case "replay":
		return runReplay(ctx, args[1:], stdout, stderr)
	case "schedule":
		return runSchedule(ctx, args[1:], stdout, stderr)
	case "queues":
		return runQueues(ctx, args[1:], stdout, stderr)
	case "stream":
		return runStream(ctx, args[1:], stdout, stderr)
	case "console":
		return runConsole(ctx, args[1:], stdout, stderr)
	case "help":
		if len(args) > 1 && !isHelp(args[1]) {
			// warrenmq help outbox release is warrenmq outbox release -h.
			return dispatch(ctx, append(append([]string(nil), args[1:]...), "-h"), stdout, stderr)
		}
		fmt.Fprintln(stdout, usage)
		return errHelp
	case "-h", "-help", "--help":
		fmt.Fprintln(stdout, usage)
		return errHelp
	}
	return fmt.Errorf("%w: unknown command %q\n%s", errUsage, args[0], usage)
}

// cell keeps a value on one line of a table and within width bytes.
func cell(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	if len(s) <= width {
		return s
	}
	cut := width
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// dialectFor is the SQL dialect a -driver names.
func dialectFor(driver string) (sqldialect.Dialect, error) { return dialectNamed("-driver", driver) }

// dialectNamed is the SQL dialect the flag flagName names.
func dialectNamed(flagName, name string) (sqldialect.Dialect, error) {
	switch name {
	case "mysql", "mariadb":
		return sqldialect.MySQL, nil
	case "pgx", "postgres", "postgresql":
		return sqldialect.PostgreSQL, nil
	case "sqlite":
		return sqldialect.SQLite, nil
	}
	return sqldialect.Dialect{}, fmt.Errorf("%w: unknown %s %q; use mysql, pgx (postgres) or sqlite", errUsage, flagName, name)
}

const statusUsage = `usage:
  warrenmq status [-amqp URL] [-timeout 10s] [-json]

Runs the broker health probe once: connects, publishes a probe message and
waits for its confirm. Exit status: 0 when the broker confirmed it; 1 when it
did not (the error says why); 2 on bad usage.`

// statusJSON is what status -json prints.
type statusJSON struct {
	OK      bool    `json:"ok"`
	Address string  `json:"address"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	set := flag.NewFlagSet("warrenmq status", flag.ContinueOnError)
	address := set.String("amqp", envOr("WARRENMQ_AMQP", defaultAddress), "RabbitMQ address")
	timeout := set.Duration("timeout", 10*time.Second, "how long the probe may take")
	asJSON := set.Bool("json", false, "print a JSON document")
	if err := parseFlags(set, args, statusUsage, stdout, stderr); err != nil {
		return err
	}
	if set.NArg() != 0 {
		return fmt.Errorf("%w: status takes no arguments\n%s", errUsage, statusUsage)
	}
	if _, err := amqp.ParseURI(*address); err != nil { // its text may quote a piece of the password
		return fmt.Errorf("the -amqp address %s is malformed; write it as amqp://user:password@host:5672/vhost, with reserved characters in the user or password ('#', '@', ':', '/', '?', '%%') percent-encoded", redact.Address(*address))
	}
	transport := rabbitmq.New(rabbitmq.Options.Address(*address), rabbitmq.Options.BrokerTimeout(*timeout))
	defer transport.Close()
	checker := status.New(status.Options.Connector(transport))
	defer checker.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	started := time.Now()
	probeErr := checker.Probe(ctx) // no tolerance window: the answer now
	took := time.Since(started)
	if *asJSON {
		report := statusJSON{OK: probeErr == nil, Address: redact.Address(*address), Seconds: took.Seconds()}
		if probeErr != nil {
			report.Error = probeErr.Error()
		}
		if err := writeJSON(stdout, report); err != nil {
			return err
		}
	}
	if probeErr != nil {
		return fmt.Errorf("broker probe of %s failed: %w", redact.Address(*address), probeErr)
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "broker ok at %s: probe confirmed in %s\n", redact.Address(*address), took.Round(time.Microsecond))
	}
	return nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
