package schema

import (
	"context"
	"errors"
	"testing"
	"time"
)

// registryContract is what every Registry must answer; it runs against the
// memory registry here and against the SQL registry on each database.
func registryContract(t *testing.T, r Registry) {
	ctx := context.Background()
	const subject = "order.placed"
	first, err := r.Register(ctx, subject, "avro", `{"type":"record","name":"Order"}`)
	if err != nil {
		t.Fatal(err)
	}
	if first.Version != 1 || first.ID == 0 || first.Subject != subject || first.Format != "avro" || first.RegisteredAt.IsZero() {
		t.Fatalf("first registration: %+v", first)
	}
	if first.Fingerprint != Fingerprint(`{"type":"record","name":"Order"}`) || len(first.Fingerprint) != 64 {
		t.Fatalf("fingerprint %q", first.Fingerprint)
	}
	again, err := r.Register(ctx, subject, "avro", `{"type":"record","name":"Order"}`)
	if err != nil || again.ID != first.ID || again.Version != 1 {
		t.Fatalf("registering the same definition again: %+v, %v; want version 1, id %d", again, err, first.ID)
	}
	spaced, err := r.Register(ctx, subject, "avro", `{"type": "record","name":"Order"}`)
	if err != nil || spaced.Version != 2 || spaced.ID == first.ID {
		t.Fatalf("a whitespace difference: %+v, %v; want version 2", spaced, err)
	}
	other, err := r.Register(ctx, "order.shipped", "avro", `{"type":"record","name":"Order"}`)
	if err != nil || other.Version != 1 || other.ID == first.ID || other.ID == spaced.ID {
		t.Fatalf("the same definition under another subject: %+v, %v; want its own version 1 and id", other, err)
	}
	if caseOnly, err := r.Register(ctx, "Order.Placed", "avro", "x"); err != nil || caseOnly.Version != 1 {
		t.Fatalf("subjects are compared byte for byte: %+v, %v", caseOnly, err)
	}

	got, err := r.ByID(ctx, spaced.ID)
	if err != nil || !same(got, spaced) {
		t.Fatalf("ByID: %+v, %v; want %+v", got, err, spaced)
	}
	got, err = r.ByVersion(ctx, subject, 1)
	if err != nil || !same(got, first) {
		t.Fatalf("ByVersion: %+v, %v", got, err)
	}
	got, err = r.ByFingerprint(ctx, subject, spaced.Fingerprint)
	if err != nil || !same(got, spaced) {
		t.Fatalf("ByFingerprint: %+v, %v", got, err)
	}
	got, err = r.Latest(ctx, subject)
	if err != nil || !same(got, spaced) {
		t.Fatalf("Latest: %+v, %v", got, err)
	}
	all, err := r.Versions(ctx, subject)
	if err != nil || len(all) != 2 || !same(all[0], first) || !same(all[1], spaced) {
		t.Fatalf("Versions: %+v, %v", all, err)
	}

	for name, lookup := range map[string]func() error{
		"ByID":          func() error { _, err := r.ByID(ctx, 1<<40); return err },
		"ByVersion":     func() error { _, err := r.ByVersion(ctx, subject, 3); return err },
		"ByFingerprint": func() error { _, err := r.ByFingerprint(ctx, "order.shipped", spaced.Fingerprint); return err },
		"Latest":        func() error { _, err := r.Latest(ctx, "nothing"); return err },
		"Versions":      func() error { _, err := r.Versions(ctx, "nothing"); return err },
	} {
		if err := lookup(); !errors.Is(err, ErrSchemaNotFound) {
			t.Errorf("%s of something absent: %v; want ErrSchemaNotFound", name, err)
		}
	}
	if _, err := r.ByID(ctx, 1<<40); err.Error() != "acemq: no such schema with id 1099511627776" {
		t.Errorf("ByID's text: %q", err)
	}
	if _, err := r.Latest(ctx, "nothing"); err.Error() != `acemq: no such schema for subject "nothing"` {
		t.Errorf("Latest's text: %q", err)
	}
	for _, args := range [][2]string{{"", "d"}, {"s", ""}} {
		if _, err := r.Register(ctx, args[0], "avro", args[1]); !errors.Is(err, ErrInvalidSchema) || err.Error() != "acemq: a schema needs a subject and a definition" {
			t.Errorf("Register(%q, %q): %v; want ErrInvalidSchema", args[0], args[1], err)
		}
	}
	long := make([]byte, MaxSubject+1)
	for i := range long {
		long[i] = 's'
	}
	if _, err := r.Register(ctx, string(long), "avro", "d"); err == nil {
		t.Error("a subject over 255 bytes was registered")
	}
}

// same compares two schemas, their times to the microsecond a database keeps.
func same(a, b Schema) bool {
	at, bt := a.RegisteredAt, b.RegisteredAt
	a.RegisteredAt, b.RegisteredAt = time.Time{}, time.Time{}
	return a == b && at.Truncate(time.Microsecond).Equal(bt.Truncate(time.Microsecond))
}

func TestMemoryRegistry(t *testing.T) {
	registryContract(t, NewMemoryRegistry())
}

func TestMemoryRegistryConcurrentRegistrationsAgree(t *testing.T) {
	r := NewMemoryRegistry()
	results := registerConcurrently(t, r, 8, "concurrent")
	checkAgreement(t, [][]Schema{results})
}
