// Package claimcheck moves a payload too large for a broker into a store and
// sends a reference to it, the seed's Claim check pattern as a
// serialization.Serializer and Deserializer over any other one (JSON by
// default):
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
// Rows of the patterns map (CC1-CC20), as built here:
//
//   - CC1 New(delegate, store, options...) returns a *Codec; install it with
//     serialization.Options.Serializer and AddDeserializer (the seed's
//     WithCodec).
//   - CC2 DefaultThreshold = 64 << 10, compared against the encoded length:
//     len < threshold is inline, so a payload exactly at it is offloaded.
//   - CC3 Options.OffloadAbove(n); zero offloads everything (the exception to
//     this module's "zero means the default"); a negative n is the default.
//   - CC4, CC5 the framing bytes above, byte for byte; the key is bare UTF-8.
//     Over serialization.JSON the inline frame is written into the spare
//     capacity of JSON's fresh slice; another delegate's payload is copied.
//     A frame of another version or form (0xAC 0x02, 0xAC 0x01 0x02) is not
//     ours and goes to the delegate as it is, like any unframed body.
//   - CC6 an unframed body is the delegate's.
//   - CC7 ContentType returns the delegate's.
//   - CC8, CC16 the codec writes no header (x-acemq-claim is the
//     application's: messaging.Dispatch.Claim) and never calls Delete.
//   - CC9 KeyOf(body) (the seed's ClaimKeyOf) and IsClaimChecked(body).
//   - CC10, CC17 Store: Put, Get (found versus failed), Delete, no context; a
//     store doing network I/O carries its own timeout.
//   - CC11 a key the store does not hold is messaging.Fatal with the seed's
//     text, so the runtime parks the message (the .parked queue, where every
//     undecodable message goes) with a reason that names the key. A key the
//     store refuses (ErrInvalidKey), or one that is empty or not UTF-8, is
//     fatal too.
//   - CC12 a failed Get is messaging.Retryable with the seed's text; the
//     runtime's settlement decorator retries it through the retry policy and
//     dead-letters it when the budget is spent.
//   - CC13 NewMemoryStore copies bytes in and out; Len.
//   - CC14 NewFilesystemStore(dir): a temporary file, synced, then renamed;
//     the directory must exist. A crash between the two leaves a
//     ".<uuid>.tmp" file that no key names; remove such files with your
//     retention job.
//   - CC15 only UUID keys (any case) are accepted, before any path is made;
//     every file is opened through an os.Root on the directory as well.
//   - CC18 an empty key from Put refuses the write with a messaging.Fatal
//     error; a failed Put refuses it with the store's error.
//   - CC19 not applicable: serialization picks a deserializer by content
//     type, and Codec wraps whatever Delegate it is given.
//   - CC20 retention: above and in doc/patterns-claimcheck.md.
//
// Monitor counts inline and offloaded payloads, fetches, missing keys and
// store failures.
package claimcheck
