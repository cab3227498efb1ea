package idempotency

import (
	"database/sql"
	"errors"
	"reflect"
)

// ErrClientFoundRows is what NewSQLStore returns for a MySQL handle whose
// connections were opened with clientFoundRows=true. Such a connection reports
// the rows a statement matched instead of those it changed, so the no-op
// upsert of a key that is already there reads as one row changed: every
// duplicate would read as claimed and its handler run again.
var ErrClientFoundRows = errors.New("idempotency: the MySQL handle was opened with clientFoundRows=true, which reports a key that is already claimed as newly claimed, so duplicates would run their handlers again; give the store a handle whose DSN does not set clientFoundRows (a second *sql.DB for it is fine)")

// reportsFoundRows reports whether db is a database/sql handle (*sql.DB, or a
// *sql.Conn or *sql.Tx of one) over go-sql-driver/mysql whose configuration
// sets ClientFoundRows. It reads the handle's connector by reflection, so the
// driver is not linked into a program that does not use it; a handle it
// cannot see into (a wrapper of your own, another driver) reports false.
func reportsFoundRows(db DB) bool {
	v := follow(reflect.ValueOf(db))
	if v.IsValid() && (v.Type() == reflect.TypeFor[sql.Conn]() || v.Type() == reflect.TypeFor[sql.Tx]()) {
		v = follow(field(v, "db"))
	}
	if !v.IsValid() || v.Type() != reflect.TypeFor[sql.DB]() {
		return false
	}
	found := field(follow(field(follow(field(v, "connector")), "cfg")), "ClientFoundRows")
	return found.IsValid() && found.Kind() == reflect.Bool && found.Bool()
}

// field is v's field name, or the zero Value when v is not a struct that has
// one.
func field(v reflect.Value, name string) reflect.Value {
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.FieldByName(name)
}

// follow goes through interfaces and pointers to what they hold; the zero
// Value when there is nothing there.
func follow(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}
