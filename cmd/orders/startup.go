package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
)

// startupTimeout bounds each check the service makes before it serves.
const startupTimeout = 15 * time.Second

// MariaDB's error numbers for faults at start that do not fix themselves.
const (
	mysqlAccessDenied   = 1045 // ER_ACCESS_DENIED_ERROR: user name or password
	mysqlDBAccessDenied = 1044 // ER_DBACCESS_DENIED_ERROR: no rights on the database
	mysqlUnknownDB      = 1049 // ER_BAD_DB_ERROR: the database does not exist
	mysqlDuplicateKey   = 1062 // ER_DUP_ENTRY
)

// checkAddresses refuses addresses that do not parse, before anything dials.
// The parsers' own detail is quoted only when it cannot hold a piece of the
// password: net/url quotes the address up to a '#', which may be half of it.
func checkAddresses(s settings) error {
	for _, address := range s.addresses() {
		if _, err := amqp.ParseURI(address); err != nil {
			detail := ""
			var urlErr *url.Error
			if !errors.As(err, &urlErr) {
				detail = " (" + redact.Text(err.Error(), address) + ")"
			}
			return fmt.Errorf("the -amqp address %s is malformed%s; give a URI such as amqp://user:password@host:5672/vhost, "+
				"with any '#', '@', ':', '/' or '%%' in the user name or password percent-encoded (%%23, %%40, %%3A, %%2F, %%25)",
				redact.Address(address), detail)
		}
	}
	if _, err := mysql.ParseDSN(s.dsn); err != nil {
		return fmt.Errorf("the -dsn %s does not parse (%s); give one such as user:password@tcp(127.0.0.1:3306)/test?parseTime=true",
			redact.Address(s.dsn), redact.Text(err.Error(), s.dsn))
	}
	return nil
}

// preflight turns "connection refused" into what to do about it. A service
// started before its broker or database stops here, and its supervisor starts
// it again.
func preflight(s settings) error {
	var hosts []string
	var dialErr error
	for _, address := range s.addresses() {
		host := "127.0.0.1:5672"
		if u, err := url.Parse(address); err == nil && u.Host != "" {
			host = u.Host
			if u.Port() == "" {
				host = net.JoinHostPort(u.Hostname(), "5672")
			}
		}
		hosts = append(hosts, host)
		if dialErr = dial(host); dialErr == nil {
			break // one node answering is enough: the transport tries them in turn
		}
	}
	if dialErr != nil {
		return fmt.Errorf("cannot reach RabbitMQ at %s: is it running? `make services` starts it (%w)", strings.Join(hosts, ", "), dialErr)
	}
	cfg, err := mysql.ParseDSN(s.dsn)
	if err != nil {
		return fmt.Errorf("the -dsn %s does not parse: %s", redact.Address(s.dsn), redact.Text(err.Error(), s.dsn))
	}
	if cfg.Net == "tcp" {
		if err := dial(cfg.Addr); err != nil {
			return fmt.Errorf("cannot reach MariaDB at %s: is it running? `make services` starts it (%w)", cfg.Addr, err)
		}
	}
	return nil
}

func dial(address string) error {
	conn, err := net.DialTimeout("tcp", address, 3*time.Second)
	if err != nil {
		return err
	}
	return conn.Close()
}

// checkDatabase pings MariaDB once, bounded, and says what to do about a
// refusal: wrong credentials or a missing database stop the service.
func checkDatabase(ctx context.Context, db *sql.DB, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	err := db.PingContext(ctx)
	if err == nil {
		return nil
	}
	where := redact.Address(dsn)
	var mysqlErr *mysql.MySQLError
	if errors.As(err, &mysqlErr) {
		switch mysqlErr.Number {
		case mysqlAccessDenied:
			return fmt.Errorf("MariaDB refused the user name or password in -dsn %s (%w); correct them in -dsn (or ORDERS_DSN)", where, err)
		case mysqlUnknownDB, mysqlDBAccessDenied:
			return fmt.Errorf("MariaDB refused the database in -dsn %s (%w); create it, grant the user access, or name another database in -dsn", where, err)
		}
	}
	return fmt.Errorf("cannot use MariaDB at %s: %w; is it running? `make services` starts it", where, err)
}

// checkBroker opens and closes one connection, bounded. A refusal that no wait
// will fix (bad credentials, a missing vhost, no permission: messaging.IsPermanent
// classifies it on the error) stops the service; anything else is an outage,
// logged, and the consumer and the outbox keep retrying as they always do.
func checkBroker(ctx context.Context, transport messaging.Connector, addresses []string, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	connection, err := transport.Connect(ctx)
	if err == nil {
		return connection.Close()
	}
	if messaging.IsPermanent(err) {
		return fmt.Errorf("RabbitMQ at %s refused the service, which no retry will fix: %w; "+
			"correct the user name, password or vhost in -amqp (or ORDERS_AMQP), create the vhost, or grant the user access to it",
			redactAll(addresses), err)
	}
	logger.Warn("orders: RabbitMQ did not accept a connection at start; the consumer and the outbox keep retrying.",
		"amqp", redactAll(addresses), "error", err)
	return nil
}

// secrets are the addresses whose passwords nothing may print.
func (s settings) secrets() []string {
	return append(s.addresses(), s.dsn)
}

// addresses are the -amqp addresses, in the order given.
func (s settings) addresses() []string {
	return strings.Fields(s.amqp)
}

// redactAll is addresses, each without its password, for a log line.
func redactAll(addresses []string) string {
	masked := make([]string, len(addresses))
	for i, address := range addresses {
		masked[i] = redact.Address(address)
	}
	return strings.Join(masked, " ")
}
