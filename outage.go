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
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr)
}
