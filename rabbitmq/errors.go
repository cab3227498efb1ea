package rabbitmq

import "github.com/warrenmq/messaging"

// The sentinels a bounded wait returns when the broker timeout passes and the
// connection is severed; they are the root package's, re-exported for callers
// that import only this package.
var (
	ErrCommitTimeout      = messaging.ErrCommitTimeout
	ErrPublishTimeout     = messaging.ErrPublishTimeout
	ErrAcknowledgeTimeout = messaging.ErrAcknowledgeTimeout
	ErrCloseTimeout       = messaging.ErrCloseTimeout
	ErrConnectTimeout     = messaging.ErrConnectTimeout
)
