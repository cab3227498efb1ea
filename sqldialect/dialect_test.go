package sqldialect

import (
	"database/sql"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestDialectFixture(t *testing.T) {
	gunit.Run(new(DialectFixture), t)
}

type DialectFixture struct {
	*gunit.Fixture
}

func (f *DialectFixture) TestTheZeroDialectIsMySQL() {
	f.So(Dialect{}.IsMySQL(), should.BeTrue)
	f.So(Dialect{}.String(), should.Equal, "mysql")
	f.So(PostgreSQL.IsMySQL() || SQLite.IsMySQL(), should.BeFalse)
	f.So(PostgreSQL.IsPostgreSQL() && SQLite.IsSQLite(), should.BeTrue)
}

func (f *DialectFixture) TestRebindNumbersPlaceholdersOnPostgreSQLOnly() {
	f.So(PostgreSQL.Rebind("a = ? AND b IN ("+Placeholders(2)+")"), should.Equal, "a = $1 AND b IN ($2,$3)")
	f.So(MySQL.Rebind("a = ?"), should.Equal, "a = ?")
	f.So(SQLite.Rebind("a = ?"), should.Equal, "a = ?")
	f.So(Placeholders(0), should.Equal, "")
}

func (f *DialectFixture) TestEachDialectsOwnClauses() {
	f.So(MySQL.LockClause(), should.Equal, " FOR UPDATE SKIP LOCKED")
	f.So(SQLite.LockClause(), should.Equal, "")
	f.So(MySQL.IgnoreDuplicate("id"), should.Equal, " ON DUPLICATE KEY UPDATE id = id")
	f.So(PostgreSQL.IgnoreDuplicate("id"), should.Equal, " ON CONFLICT DO NOTHING")
	f.So(SQLite.TxOptions(sql.LevelReadCommitted), should.BeNil)
	f.So(MySQL.TxOptions(sql.LevelReadCommitted).Isolation, should.Equal, sql.LevelReadCommitted)
}

func (f *DialectFixture) TestATimeIsStoredAndReadBackInUTC() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.FixedZone("x", 3600))
	f.So(SQLite.Time(at), should.Equal, "2026-01-02 02:04:05.600000")
	f.So(MySQL.Time(at), should.Equal, at.UTC())
	for _, stored := range []any{SQLite.Time(at), []byte("2026-01-02 02:04:05.600000"), at} {
		var read Timestamp
		f.So(read.Scan(stored), should.BeNil)
		f.So(read.Time.Equal(at), should.BeTrue)
		f.So(read.Location(), should.Equal, time.UTC)
	}
	var read Timestamp
	f.So(read.Scan(42), should.NotBeNil)
	f.So(read.Scan("yesterday"), should.NotBeNil)
	f.So(read.Scan(nil), should.BeNil)
	f.So(read.IsZero(), should.BeTrue)
}

func (f *DialectFixture) TestOnlyPlainIdentifiersAreTableNames() {
	for _, good := range []string{"Messages", "app.outbox_2", "_t"} {
		f.So(IsTableName(good), should.BeTrue)
		f.So(CheckTable("x", good), should.BeNil)
	}
	for _, bad := range []string{"", "x; DROP TABLE y", "a.b.c", "1abc", "a-b", "`t`"} {
		f.So(IsTableName(bad), should.BeFalse)
		f.So(CheckTable("owner", bad).Error(), should.StartWith, "owner: table name")
	}
	f.So(BareName("app.outbox"), should.Equal, "outbox")
	f.So(BareName("outbox"), should.Equal, "outbox")
}
