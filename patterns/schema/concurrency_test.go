package schema

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// definitions are the ten definitions every registrant registers.
func definitions() []string {
	var all []string
	for i := range 10 {
		all = append(all, fmt.Sprintf(`{"type":"record","name":"Order","fields":[{"name":"f%d","type":"int"}]}`, i))
	}
	return all
}

// registerConcurrently has goroutines register the ten definitions, each in
// its own order, and returns what each registration answered, in the order
// of definitions() per goroutine, concatenated.
func registerConcurrently(t *testing.T, r Registry, goroutines int, subject string) []Schema {
	t.Helper()
	defs := definitions()
	results := make([]Schema, goroutines*len(defs))
	errs := make(chan error, goroutines*len(defs))
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for _, i := range rand.Perm(len(defs)) {
				s, err := r.Register(context.Background(), subject, "avro", defs[i])
				if err != nil {
					errs <- err
					return
				}
				results[g*len(defs)+i] = s
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return results
}

// checkAgreement checks that every registrant, in every process, got the
// same id and version for each definition, and that the ten versions are
// 1 to 10.
func checkAgreement(t *testing.T, processes [][]Schema) {
	t.Helper()
	defs := definitions()
	first := processes[0][:len(defs)]
	versions := map[int]bool{}
	for i, s := range first {
		if s.Definition != defs[i] || s.Fingerprint != Fingerprint(defs[i]) {
			t.Fatalf("definition %d came back as %+v", i, s)
		}
		versions[s.Version] = true
	}
	for v := 1; v <= len(defs); v++ {
		if !versions[v] {
			t.Fatalf("the ten definitions have versions %v; want 1 to %d", versions, len(defs))
		}
	}
	registrations := 0
	for p, results := range processes {
		for j, s := range results {
			want := first[j%len(defs)]
			if s.ID != want.ID || s.Version != want.Version {
				t.Fatalf("process %d, registration %d: id %d version %d; another registrant of the same definition got id %d version %d", p, j, s.ID, s.Version, want.ID, want.Version)
			}
			registrations++
		}
	}
	t.Logf("%d registrations in %d processes agree on %d versions", registrations, len(processes), len(defs))
}
