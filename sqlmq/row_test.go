package sqlmq

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/sqldialect"
)

// everyField returns an envelope with a distinct value in every field, set by
// reflection so that a field added to messaging.Envelope is in it too.
func everyField(t *testing.T) messaging.Envelope {
	t.Helper()
	var e messaging.Envelope
	v := reflect.ValueOf(&e).Elem()
	base := time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)
	for i := range v.NumField() {
		field := v.Field(i)
		switch field.Interface().(type) {
		case string:
			field.SetString("value-of-" + v.Type().Field(i).Name)
		case int:
			field.SetInt(int64(i + 2))
		case time.Time:
			field.Set(reflect.ValueOf(base.Add(time.Duration(i) * time.Second)))
		case time.Duration:
			field.SetInt(int64(time.Duration(i) * time.Second))
		case []string:
			field.Set(reflect.ValueOf([]string{"first", v.Type().Field(i).Name}))
		default:
			t.Fatalf("everyField does not know how to fill %s, a %s", v.Type().Field(i).Name, field.Type())
		}
	}
	return e
}

// Every envelope field a dispatch carries is in its row: stored, read back,
// and published as it was written.
func TestEveryEnvelopeFieldSurvivesTheRow(t *testing.T) {
	db := openSQLite(t)
	want := everyField(t)
	d := messaging.Dispatch{Topic: "events", Payload: []byte("x")}
	d.SetEnvelope(want)
	normalized, err := normalize(d, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := normalized.Envelope(); !reflect.DeepEqual(got, want) {
		t.Fatalf("normalize changed the envelope:\n got %+v\nwant %+v", got, want)
	}
	s := newStore(db, sqldialect.SQLite, DefaultTable)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	ids, _, err := s.insert(context.Background(), tx, true, []messaging.Dispatch{normalized}, time.Now(), "owner", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rows, unreadable, err := s.read(context.Background(), db, ids)
	if err != nil || len(unreadable) > 0 || len(rows) != 1 {
		t.Fatalf("read back %d row(s), %d unreadable: %v", len(rows), len(unreadable), err)
	}
	if got := rows[0].dispatch.Envelope(); !reflect.DeepEqual(got, want) {
		t.Fatalf("the row read back carries another envelope:\n got %+v\nwant %+v", got, want)
	}
}

// The check of a commit in doubt tells a committed row from one that never
// was, and refuses to guess when the id holds another message.
func TestTheCheckOfACommitInDoubtReadsTheRowBackByItsID(t *testing.T) {
	db := openSQLite(t)
	s := newStore(db, sqldialect.SQLite, DefaultTable)
	if _, err := db.Exec("INSERT INTO Messages (id, message_id, payload, created_us) VALUES (7, 'seven', x'', 1)"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if stored, err := s.committed(ctx, 7, "seven"); !stored || err != nil {
		t.Errorf("a committed row: stored %v, %v", stored, err)
	}
	if stored, err := s.committed(ctx, 8, "eight"); stored || err != nil {
		t.Errorf("a row never committed: stored %v, %v", stored, err)
	}
	if _, err := s.committed(ctx, 7, "other"); err == nil {
		t.Error("an id holding another message was taken for the commit's")
	}
	var rows int
	if err := db.QueryRow("SELECT COUNT(*) FROM Messages").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("the check left %d row(s) (%v); its probe must be rolled back", rows, err)
	}
}
