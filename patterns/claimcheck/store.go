package claimcheck

import "errors"

// Store keeps the payloads that are too large to travel in a message. It has
// no context (a serializer has none to pass on): a store doing network I/O
// carries its own timeout, or a hung object store hangs the consumer's
// delivery. Nothing in it knows about messaging, so a store in front of S3 or
// Azure Blob Storage is a small type.
type Store interface {
	// Put keeps content and returns the key Get finds it by. The key travels
	// in the message as bare UTF-8.
	Put(content []byte) (key string, err error)
	// Get returns the content kept under key. found is false, with a nil
	// error, when the store answered and does not hold key: that is the only
	// verdict on the message (it is parked). err is for a store that did not
	// answer (a timeout, a refused connection, an overloaded service): the
	// message is held as an outage, with no attempt spent, until the store
	// answers. Mark err messaging.Fatal for a key asking again cannot help
	// (ErrInvalidKey does the same), or messaging.Retryable to have the
	// failure spend the message's retry budget.
	Get(key string) (content []byte, found bool, err error)
	// Delete forgets key. The codec never calls it: when a payload may go is
	// a retention decision, and it belongs to whoever owns the data.
	Delete(key string) error
}

// ErrInvalidKey reports a key a store refuses to look up because it could
// not have issued it (the filesystem store accepts only UUIDs). The codec
// treats it as fatal, like a missing key: asking again cannot help.
var ErrInvalidKey = errors.New("claimcheck: the key is not one this store issues")
