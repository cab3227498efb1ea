// Package encryption is a serialization codec that encrypts what another codec
// writes, with AES-GCM, in the framing the AceMQ family's libraries read and
// write (content type application/vnd.acemq.encrypted):
//
//	0xAE | 0x01 | key id length (1 byte) | key id (UTF-8) | nonce (12 bytes) | ciphertext | tag (16 bytes)
//
// The first 3+len(key id) bytes (magic, version, length and key id) are the
// header: they travel in clear, so a reader knows which key to use, and they
// are authenticated as AES-GCM's associated data, so changing the key id or
// the version fails the decryption like changing any other byte. The nonce
// comes from crypto/rand for every message.
//
// The inner format (JSON by default) is not written on the wire: the payload
// says only that it is encrypted. Both sides name it: the publisher's codec
// and the consumer's codec for application/vnd.acemq.encrypted wrap the same
// inner codec, as every AceMQ library's crypto codec does. A queue that
// carries encrypted messages of several inner formats needs one consumer
// configuration per format.
//
// A KeyRing holds several keys by id; the codec writes with the ring's
// current key and reads with any key it holds, so keys rotate without a flag
// day (see KeyRing). Every decryption failure is messaging.Fatal: a body that
// was never encrypted, a key id the ring does not hold, a body that was
// tampered with or cut short. Waiting cannot fix any of them, so the message
// is parked at once with a reason that says which.
//
// One key may encrypt at most 2^32 messages (about four billion) before it
// must be rotated: with random 96-bit nonces, that is the bound under which
// the chance that two messages ever share a nonce stays below 2^-32, and a
// repeated nonce under one key would reveal the XOR of the two plaintexts
// and let an attacker forge messages. Count it across every process that
// writes with the key.
package encryption
