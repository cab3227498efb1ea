package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"

	"github.com/warrenmq/messaging"
)

const (
	secretAddress = "amqp://guest:Pw%23Tok%40en%3AZz@127.0.0.1:5672/"
	secretDSN     = "root:Pw#Tok@en:Zz@tcp(127.0.0.1:3306)/test"
)

// secretPieces are the password and its fragments in both forms; none may appear.
var secretPieces = []string{"Pw#Tok@en:Zz", "Pw%23Tok%40en%3AZz", "Pw#", "Tok@", "en:Zz", "%3AZz"}

func (f *CheckerFixture) assertNoSecret(text string) {
	for _, piece := range secretPieces {
		f.So(text, should.NotContainSubstring, piece)
	}
}

func (f *CheckerFixture) TestReportOfHealthyDependencies() {
	checker := New(Options.Connector(f.connector),
		Options.Check("database", func(context.Context) error { return nil }))
	report := checker.Report(context.Background())
	f.So(report.Healthy(), should.BeTrue)
	encoded, _ := json.Marshal(report)
	f.So(string(encoded), should.Equal,
		`{"status":"ok","checks":[{"name":"broker","status":"ok"},{"name":"database","status":"ok"}]}`)
}

func (f *CheckerFixture) TestAFailingCheckFailsTheReportAtOnce() {
	checker := New(Options.Connector(f.connector),
		Options.Check("database", func(context.Context) error { return errors.New("dial tcp 127.0.0.1:3306: connection refused") }),
		Options.Check("subscriptions", func(context.Context) error { return nil }))
	report := checker.Report(context.Background())
	f.So(report.Healthy(), should.BeFalse)
	f.So(report.Status, should.Equal, "failing")
	f.So(report.Checks[0], should.Equal, CheckResult{Name: "broker", Status: "ok"})
	f.So(report.Checks[1].Status, should.Equal, "failing")
	f.So(report.Checks[1].Error, should.ContainSubstring, "connection refused")
	f.So(report.Checks[2].Status, should.Equal, "ok")
}

func (f *CheckerFixture) TestACheckIgnoringItsContextIsBoundedByTheCheckTimeout() {
	f.inBubble(func() {
		release := make(chan struct{})
		defer close(release)
		checker := New(Options.Connector(f.connector),
			Options.CheckTimeout(10*time.Millisecond),
			Options.Check("stuck", func(context.Context) error { <-release; return nil }))
		began := time.Now()
		report := checker.Report(context.Background())
		f.So(time.Since(began), should.Equal, 10*time.Millisecond)
		f.So(report.Healthy(), should.BeFalse)
		f.So(report.Checks[1].Error, should.ContainSubstring, "did not answer within 10ms")
	})
}

func (f *CheckerFixture) TestACheckStillRunningIsNotStartedAgain() {
	f.inBubble(func() {
		release := make(chan struct{})
		var started atomic.Int32
		checker := New(Options.Connector(f.connector),
			Options.CheckTimeout(10*time.Millisecond),
			Options.Check("stuck", func(context.Context) error { started.Add(1); <-release; return nil }))
		for range 5 {
			report := checker.Report(context.Background())
			f.So(report.Healthy(), should.BeFalse)
		}
		f.So(started.Load(), should.Equal, 1) // one goroutine, not one per request
		f.So(checker.Report(context.Background()).Checks[1].Error, should.ContainSubstring, "has not returned")

		close(release)
		synctest.Wait()
		f.So(checker.Report(context.Background()).Healthy(), should.BeTrue)
		f.So(started.Load(), should.Equal, 2)
	})
}

func (f *CheckerFixture) TestABrokerFailureInsideTheWindowKeepsTheReportHealthy() {
	f.connector.commitErr = errors.New("broker restarting")
	report := f.checker.Report(context.Background())
	f.So(report.Healthy(), should.BeTrue)
}

func (f *CheckerFixture) TestPasswordsNeverAppearInErrorsLogsOrReports() {
	credentials := &messaging.BrokerError{Code: messaging.ReplyAccessRefused, Text: "username or password not allowed"}
	leak := fmt.Errorf("connect to %s and %s failed (password Pw#Tok@en:Zz): %w", secretAddress, secretDSN, credentials)
	f.connector.connectErr = leak
	checker := New(Options.Connector(f.connector),
		Options.Redact(secretAddress, secretDSN),
		Options.Logger(f.checker.config.logger),
		Options.Check("database", func(context.Context) error { return leak }))

	err := checker.Status(context.Background())
	f.So(errors.Is(err, messaging.ErrAccessRefused), should.BeTrue) // the chain survives
	f.assertNoSecret(err.Error())
	f.So(err.Error(), should.ContainSubstring, "guest:xxxxx@127.0.0.1:5672")

	probeErr := checker.Probe(context.Background())
	f.So(probeErr, should.NotBeNil)
	f.assertNoSecret(probeErr.Error())

	encoded, _ := json.Marshal(checker.Report(context.Background()))
	f.So(string(encoded), should.ContainSubstring, `"status":"failing"`)
	f.assertNoSecret(string(encoded))

	f.connector.connectErr = errors.New("transient: " + secretAddress) // a tolerated failure is logged
	f.So(checker.Status(context.Background()), should.BeNil)
	f.So(f.logs.String(), should.ContainSubstring, "Broker status probe failed")
	f.assertNoSecret(f.logs.String())
}
