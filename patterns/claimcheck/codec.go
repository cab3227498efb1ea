package claimcheck

import (
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/serialization"
)

// Delegate is the codec a claim check wraps: it encodes messages on write and
// decodes payloads on read, and its content type is the one written.
type Delegate interface {
	serialization.Serializer
	serialization.Deserializer
}

// Codec is a serialization.Serializer and Deserializer that frames what its
// delegate writes and moves a large payload to a Store. Install it on both
// sides of a queue:
//
//	codec, err := claimcheck.New(nil, store) // JSON
//	connector := serialization.New(transport,
//		serialization.Options.Serializer(codec),
//		serialization.Options.AddDeserializer(codec),
//		...)
//
// It is safe for concurrent use when its delegate and store are.
type Codec struct {
	delegate  Delegate
	store     Store
	threshold int
	monitor   Monitor
	// framesJSON is true when the delegate is serialization.JSON itself (not
	// a type that embeds it and may write otherwise): JSON writes the inline
	// frame in front of its payload, so an inline body is not copied again.
	framesJSON bool
}

// New returns a Codec over delegate (nil means serialization.JSON) that keeps
// payloads of Options.OffloadAbove bytes or more (DefaultThreshold) in store.
// The error is a nil store.
func New(delegate Delegate, store Store, options ...Option) (*Codec, error) {
	if store == nil {
		return nil, errors.New("claimcheck: New needs a store; use NewFilesystemStore, or NewMemoryStore in tests")
	}
	if delegate == nil {
		delegate = serialization.JSON{}
	}
	c := newConfig(options)
	_, framesJSON := delegate.(serialization.JSON)
	return &Codec{delegate: delegate, store: store, threshold: c.threshold, monitor: c.monitor, framesJSON: framesJSON}, nil
}

// ContentType is the delegate's, unchanged: a claim-checked message is still
// a document of that type, kept somewhere else.
func (c *Codec) ContentType() string { return c.delegate.ContentType() }

// Serialize encodes message with the delegate. A payload shorter than the
// threshold travels inline, framed 0xAC 0x01 0x00 before the delegate's
// bytes; a longer one is put in the store and the body is 0xAC 0x01 0x01 and
// the key. The codec writes no header (x-acemq-claim is the application's).
func (c *Codec) Serialize(message any) ([]byte, error) {
	payload, framed, err := c.encode(message)
	if err != nil {
		return nil, err
	}
	if len(payload) < c.threshold {
		c.monitor.Inlined(len(payload))
		if framed != nil {
			return framed, nil
		}
		return inline(payload), nil
	}
	key, err := c.store.Put(payload)
	if err != nil {
		c.monitor.StoreFailed(OperationPut, err)
		return nil, fmt.Errorf("claimcheck: the store did not keep a payload of %d bytes, so nothing was written; check the store and write again: %w", len(payload), err)
	}
	if key == "" {
		err := messaging.Fatal(errors.New("claimcheck: the store's Put returned an empty key, so no message could refer to the payload and nothing was written; the store is broken"))
		c.monitor.StoreFailed(OperationPut, err)
		return nil, err
	}
	c.monitor.Offloaded(len(payload))
	return claim(key), nil
}

// encode returns the delegate's payload and, when the delegate is
// serialization.JSON, the same payload behind the inline frame in one slice
// (framed is nil otherwise).
func (c *Codec) encode(message any) (payload, framed []byte, err error) {
	if c.framesJSON {
		if framed, err = (serialization.JSON{}).SerializeFramed(inlineFrame, message); err != nil {
			return nil, nil, err
		}
		return framed[frameLength:], framed, nil
	}
	payload, err = c.delegate.Serialize(message)
	return payload, nil, err
}

// Deserialize decodes payload into target. An inline frame is handed to the
// delegate without its three bytes; a claim check is fetched from the store
// first; a body without the framing is the delegate's as it is, which is what
// makes adding the codec to a live queue safe.
//
// Only "the store does not hold this key" is a verdict on the message: a key
// the store does not hold, or refuses (ErrInvalidKey), or an error the store
// marked messaging.Fatal, is fatal, and the message is parked with a reason
// that names the key. Any other failure of Get is the store's (a timeout, a
// refused connection, "503 Slow Down"): the error is marked messaging.Outage
// (and Retryable, so the settlement tries the message again): it spends no
// attempt and is never dead-lettered for it, however long the store is away.
// A store that wants its failure counted against the message's retry budget
// returns it marked messaging.Retryable.
func (c *Codec) Deserialize(payload []byte, target any) error {
	form, rest, framed := frame(payload)
	if !framed {
		return c.delegate.Deserialize(payload, target)
	}
	if form == formInline {
		return c.delegate.Deserialize(rest, target)
	}
	content, err := c.fetch(rest)
	if err != nil {
		return err
	}
	return c.delegate.Deserialize(content, target)
}

// fetch reads a claim check's payload from the store.
func (c *Codec) fetch(rest []byte) ([]byte, error) {
	key, ok := keyFrom(rest)
	if !ok {
		c.monitor.Missing()
		return nil, messaging.Fatalf("claimcheck: the claim check's key %q is empty or not UTF-8, so no store issued it; the publisher is broken", shown(string(rest)))
	}
	content, found, err := c.store.Get(key)
	switch {
	case err != nil && (errors.Is(err, ErrInvalidKey) || messaging.IsFatal(err)):
		c.monitor.Missing()
		return nil, messaging.Fatal(fmt.Errorf("acemq: cannot read the claim check %q from the store: %w", shown(key), err))
	case err != nil && messaging.IsRetryable(err) && !messaging.IsOutage(err):
		// The store says the failure is the message's to pay for.
		c.monitor.StoreFailed(OperationGet, err)
		return nil, fmt.Errorf("acemq: cannot read the claim check %q from the store: %w", shown(key), err)
	case err != nil:
		// Anything else is the store's: the message is held, and read again
		// once the store answers.
		c.monitor.StoreFailed(OperationGet, err)
		return nil, messaging.Retryable(messaging.Outage(fmt.Errorf("acemq: cannot read the claim check %q from the store: %w", shown(key), err)))
	case !found:
		c.monitor.Missing()
		return nil, messaging.Fatal(fmt.Errorf("acemq: the claim check %q is not in the store, so this message cannot be read. The payload was removed while a message referring to it was still deliverable -- the store's retention has to outlast every queue, every dead-letter queue, and any replay somebody might do by hand", shown(key)))
	}
	c.monitor.Fetched(len(content))
	return content, nil
}
