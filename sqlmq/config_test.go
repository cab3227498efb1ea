package sqlmq

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/sqldialect"
)

func TestConfigFixture(t *testing.T) {
	gunit.Run(new(ConfigFixture), t)
}

type ConfigFixture struct {
	*gunit.Fixture
}

func (f *ConfigFixture) TestZeroAndNegativeValuesMeanTheDefaults() {
	c := newConfig([]Option{
		Options.StorageHandle(&sql.DB{}), Options.ChannelBufferCapacity(-1), Options.RetryDelay(0),
		Options.MaxPayload(-1), Options.RetryPolicy(retrypolicy.Policy{}),
		Options.PageSize(0), Options.LeaseTimeout(0), Options.Retention(-1), Options.PruneBatchSize(0),
		Options.PruneInterval(0), Options.ShutdownTimeout(0),
	})
	f.So(c.err, should.BeNil)
	f.So(c.table, should.Equal, "Messages")
	f.So(c.dialect.String(), should.Equal, "mysql")
	f.So(c.channelCap, should.Equal, 1024)
	f.So(c.retry, should.Equal, 5*time.Second)
	f.So(c.isolation, should.Equal, sql.LevelReadCommitted)
	f.So(c.maxPayload, should.Equal, 128<<20)
	f.So(c.policy, should.Equal, DefaultRetryPolicy())
	f.So(c.policy.MaxAttempts(), should.Equal, 10)
	f.So(c.pageSize, should.Equal, DefaultPageSize)
	f.So(c.lease, should.Equal, DefaultLeaseTimeout)
	f.So(c.sweep, should.Equal, DefaultLeaseTimeout/2)
	f.So(c.retention, should.Equal, DefaultRetention)
	f.So(c.pruneBatch, should.Equal, DefaultPruneBatchSize)
	f.So(c.shutdown, should.Equal, DefaultShutdownTimeout)
	f.So(c.owner, should.NotBeBlank)
}

func (f *ConfigFixture) TestWithoutADatabaseConnectFailsAndListenReturnsAtOnce() {
	log := newLogRecorder()
	connector, processor := New(nil, Options.Logger(slog.New(log)))
	_, err := connector.Connect(context.Background())
	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.ContainSubstring, "StorageHandle")
	processor.Listen()
	f.So(log.Lines()[0], should.StartWith, "ERROR The outbox dispatch processor cannot start")
	f.So(processor.Close(), should.BeNil)
}

func (f *ConfigFixture) TestAnUnsafeTableNameIsRefused() {
	_, err := TableSchema(sqldialect.MySQL, "x; DROP TABLE y")
	f.So(err, should.NotBeNil)
	connector, _ := New(nil, Options.StorageHandle(&sql.DB{}), Options.Table("a b"))
	_, err = connector.Connect(context.Background())
	f.So(err, should.NotBeNil)
	_, err = NewAdmin(&sql.DB{}, Options.Table("`x`")).Retired(context.Background(), 1)
	f.So(err, should.NotBeNil)
}

func (f *ConfigFixture) TestEachDialectHasItsSchemaAndTableSchemaRenamesTableAndIndexes() {
	for _, d := range []sqldialect.Dialect{sqldialect.MySQL, sqldialect.PostgreSQL, sqldialect.SQLite} {
		f.So(Schema(d), should.ContainSubstring, "CREATE TABLE IF NOT EXISTS Messages (")
		ddl, err := TableSchema(d, "app.outbox")
		f.So(err, should.BeNil)
		f.So(ddl, should.ContainSubstring, "CREATE TABLE IF NOT EXISTS app.outbox (")
		for _, index := range outboxIndexes("app.outbox") {
			declared := "INDEX " + index.Name + " (" + strings.Join(index.Columns, ", ") + ")"
			if !d.IsMySQL() {
				declared = d.CreateIndex(index)
			}
			f.So(ddl, should.ContainSubstring, declared) // the DDL and CreateSchema name the same indexes
		}
		f.So(strings.Contains(ddl, "Messages"), should.BeFalse)
		f.So(strings.Contains(ddl, "CREATE INDEX ix_"), should.BeFalse) // every index only when missing
	}
	f.So(Schema(sqldialect.Dialect{}), should.Equal, Schema(sqldialect.MySQL))
	f.So(Schema(sqldialect.PostgreSQL), should.ContainSubstring, "bytea")
}

func (f *ConfigFixture) TestPostgreSQLPlaceholdersAreNumbered() {
	f.So(sqldialect.PostgreSQL.Rebind("a = ? AND b IN (?,?)"), should.Equal, "a = $1 AND b IN ($2,$3)")
	f.So(sqldialect.MySQL.Rebind("a = ?"), should.Equal, "a = ?")
}

func (f *ConfigFixture) TestDataSourceOpensTheDatabaseAndTheProcessorClosesIt() {
	connector, processor := New(nil, Options.DataSource("no-such-driver", "x"))
	_, err := connector.Connect(context.Background())
	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.ContainSubstring, "is the driver imported?")
	f.So(processor.Close(), should.BeNil)

	_, dsn := openSQLiteDSN(tb(f))
	connector, processor = New(nil, Options.DataSource("sqlite", dsn), Options.Dialect(sqldialect.SQLite))
	connection, err := connector.Connect(context.Background())
	f.So(err, should.BeNil)
	writer, err := connection.CommitWriter(context.Background())
	f.So(err, should.BeNil)
	f.So(writer.Rollback(), should.BeNil)
	f.So(processor.Close(), should.BeNil)
	_, err = connection.CommitWriter(context.Background())
	f.So(err, should.NotBeNil) // the handle the outbox opened is closed
}

func (f *ConfigFixture) TestAnInvalidRetryPolicyIsRefused() {
	connector, _ := New(nil, Options.StorageHandle(&sql.DB{}), Options.RetryPolicy(retrypolicy.Fixed(0, time.Second)))
	_, err := connector.Connect(context.Background())
	f.So(errors.Is(err, retrypolicy.ErrInvalid), should.BeTrue)
	f.So(err.Error(), should.StartWith, "sqlmq: Options.RetryPolicy: ")
}
