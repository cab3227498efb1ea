// Package claimcheck moves a payload too large for a broker into a store and
// sends a reference to it, as a serialization.Serializer and Deserializer
// over any other one (JSON by default):
//
//	store, err := claimcheck.NewFilesystemStore("/mnt/claims")
//	codec, err := claimcheck.New(nil, store) // nil: serialization.JSON
//	connector := serialization.New(transport,
//		serialization.Options.Serializer(codec),
//		serialization.Options.AddDeserializer(codec), // for application/json
//		serialization.Options.ReadTypes(...), serialization.Options.WriteTypes(...))
//
// A payload shorter than the threshold (DefaultThreshold, 64 KiB of encoded
// bytes) travels inline; one of the threshold or more is put in the store and
// the body carries its key. The body is framed as every AceMQ library frames
// it:
//
//	0xAC 0x01 0x00 payload   inline, identical to what the delegate wrote
//	0xAC 0x01 0x01 key       a claim check; the store's key as bare UTF-8
//
// A body without the framing is read as the delegate reads it, so the codec
// can be added to a live queue. To keep reading framed bodies that arrive
// without a content type, register the codec for "" too
// (serialization.Options.AddDeserializer(codec, "application/json", "")).
//
// Retention is the part that goes wrong. The store and the queue have
// different lifetimes and nothing ties them together: a message replayed a
// month later carries a key, and if the store has let it go the message
// cannot be read, which is worse than a lost message because it looks like
// one and fails deep in a consumer. The store's retention must outlast every
// queue TTL, every dead-letter and parked queue, and however long somebody
// might sit on a message before replaying it by hand; when in doubt, longer.
// The codec never deletes: deleting on read breaks a second consumer,
// deleting on acknowledgement breaks a replay.
//
// The threshold (Options.OffloadAbove) is compared against the encoded
// length: len < threshold travels inline, so a payload exactly at it is
// offloaded; zero offloads everything. The codec writes no header
// (x-acemq-claim is the application's: messaging.Dispatch.Claim), never calls
// Delete, and returns the delegate's content type. KeyOf(body) and
// IsClaimChecked(body) read a body without fetching it.
//
// What the store answers decides a message's fate: only "the store does not
// hold this key" is a verdict on the message (messaging.Fatal: it is parked
// with a reason that names the key). Any other failure of Get is the store's:
// it is marked messaging.Outage, so the message is tried again with no
// attempt spent and is never dead-lettered because the store was away. A
// store says otherwise by marking its error messaging.Fatal (park) or
// messaging.Retryable (spend the retry budget).
//
// NewMemoryStore is for tests; NewFilesystemStore(dir) writes a temporary
// file, syncs it and renames it, accepts only UUID keys (before any path is
// made) and opens every file through an os.Root on the directory. A crash
// between write and rename leaves a ".<uuid>.tmp" file no key names: remove
// such files with your retention job.
//
// Monitor counts inline and offloaded payloads, fetches, missing keys and
// store failures.
package claimcheck
