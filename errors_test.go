package messaging

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestErrorsFixture(t *testing.T) {
	gunit.Run(new(ErrorsFixture), t)
}

type ErrorsFixture struct {
	*gunit.Fixture
}

func (f *ErrorsFixture) TestEachCodeMatchesItsSentinelOnly() {
	sentinels := []error{ErrNotFound, ErrPreconditionFailed, ErrAccessRefused, ErrResourceLocked, ErrUnroutable}
	cases := map[int]error{
		ReplyNotFound: ErrNotFound, ReplyPreconditionFailed: ErrPreconditionFailed,
		ReplyAccessRefused: ErrAccessRefused, ReplyNotAllowed: ErrAccessRefused,
		ReplyResourceLocked: ErrResourceLocked, ReplyNoRoute: ErrUnroutable,
	}
	for code, want := range cases {
		err := fmt.Errorf("wrapped: %w", &BrokerError{Code: code, Text: "TEXT"})
		for _, s := range sentinels {
			f.So(errors.Is(err, s), should.Equal, s == want)
		}
	}
	f.So(errors.Is(&BrokerError{Code: 320}, ErrNotFound), should.BeFalse)
}

func (f *ErrorsFixture) TestErrorCarriesTheBrokersWords() {
	err := &BrokerError{Code: 404, Text: "NOT_FOUND - no queue 'x'", Op: `declare queue "x"`}
	f.So(err.Error(), should.ContainSubstring, `declare queue "x"`)
	f.So(err.Error(), should.ContainSubstring, "NOT_FOUND - no queue 'x'")
}

func (f *ErrorsFixture) TestRetryable() {
	base := errors.New("store timed out")
	f.So(Retryable(nil), should.BeNil)
	f.So(IsRetryable(fmt.Errorf("x: %w", Retryable(base))), should.BeTrue)
	f.So(errors.Is(Retryable(base), base), should.BeTrue)
	f.So(IsRetryable(base), should.BeFalse)
	f.So(IsRetryable(Fatal(Retryable(base))), should.BeFalse)
}

func (f *ErrorsFixture) TestOutage() {
	base := errors.New("database is down")
	f.So(Outage(nil), should.BeNil)
	f.So(IsOutage(base), should.BeFalse)
	f.So(IsOutage(fmt.Errorf("begin: %w", Outage(base))), should.BeTrue)
	f.So(errors.Is(Outage(base), base), should.BeTrue)
	f.So(IsOutage(ErrCommitTimeout), should.BeTrue)
	f.So(IsOutage(Fatal(Outage(base))), should.BeFalse)
	f.So(IsOutage(&FieldError{Field: "MessageID", Size: 300, Limit: 255}), should.BeFalse)
	f.So(IsOutage(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), should.BeTrue)
	f.So(IsOutage(&url.Error{Op: "Get", URL: "http://x", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}), should.BeFalse)
	f.So(IsOutage(&url.Error{Op: "Get", URL: "http://x", Err: &net.DNSError{Err: "i/o timeout", Name: "x", IsTimeout: true}}), should.BeTrue)
}

func (f *ErrorsFixture) TestFieldError() {
	err := &FieldError{MessageID: "m-1", Field: "RoutingKey", Size: 300, Limit: 255}
	f.So(errors.Is(fmt.Errorf("x: %w", err), ErrWireLimit), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "RoutingKey is 300 bytes and AMQP carries at most 255")
}
