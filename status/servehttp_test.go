package status

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The checker is an http.Handler: 200 and the report when every check
// passes, 503 and the failing check's reason when one fails, never cached.
func TestTheCheckerServesItsReport(t *testing.T) {
	failing := false
	checker := New(Options.Connector(newFakeConnector()), Options.Check("database", func(context.Context) error {
		if failing {
			return errors.New("the database went away")
		}
		return nil
	}))
	defer checker.Close()
	for _, tc := range []struct {
		failing bool
		code    int
		status  string
	}{{false, http.StatusOK, "ok"}, {true, http.StatusServiceUnavailable, "failing"}} {
		failing = tc.failing
		recorder := httptest.NewRecorder()
		checker.ServeHTTP(recorder, httptest.NewRequest(http.MethodGet, "/status", nil))
		var report Report
		if err := json.Unmarshal(recorder.Body.Bytes(), &report); err != nil {
			t.Fatalf("the body is not a report: %v\n%s", err, recorder.Body)
		}
		if recorder.Code != tc.code || report.Status != tc.status || recorder.Header().Get("Cache-Control") != "no-store" ||
			recorder.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("failing=%v: %d %v %v", tc.failing, recorder.Code, recorder.Header(), report)
		}
		if tc.failing && (len(report.Checks) != 2 || report.Checks[1].Error != "the database went away") {
			t.Fatalf("the failing check is not named: %+v", report.Checks)
		}
	}
}
