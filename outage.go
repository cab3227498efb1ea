package messaging

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"
)

// isDependencyFailure recognises, without a mark, the errors that say a
// dependency went away rather than that a message is bad.
func isDependencyFailure(err error) bool {
	for _, sentinel := range []error{
		driver.ErrBadConn, syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH,
		io.ErrUnexpectedEOF, net.ErrClosed,
		ErrArrivalUnknown, ErrPublishingPaused, ErrTooManyOutstanding, ErrCommitTimeout,
		ErrPublishTimeout, ErrAcknowledgeTimeout, ErrConnectTimeout,
	} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	// A network error counts when it timed out or is a failed dial, read or
	// write: not a malformed URL, a TLS refusal or an unknown host, which
	// waiting does not fix.
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
