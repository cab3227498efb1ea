package encryption

// Monitor receives one callback per payload the codec encrypts or decrypts.
// The key ids it reports are the ring's own, never one read from a refused
// body, so a metric labelled by key id stays as small as the ring.
type Monitor interface {
	// Encrypted: a message was encrypted with the key keyID (the ring's
	// current key).
	Encrypted(keyID string)
	// Decrypted: a message was decrypted with the key keyID. Once an old key
	// is no longer reported anywhere, and no queue, dead-letter queue or
	// replay can still hold a message written with it, it can leave the ring.
	Decrypted(keyID string)
	// Refused: a body could not be decrypted; err matches ErrNotEncrypted,
	// ErrUnsupportedVersion, ErrUnknownKey or ErrTampered.
	Refused(err error)
}

// NopMonitor ignores every event; embed it to implement only the callbacks
// you need.
type NopMonitor struct{}

// Encrypted does nothing.
func (NopMonitor) Encrypted(string) {}

// Decrypted does nothing.
func (NopMonitor) Decrypted(string) {}

// Refused does nothing.
func (NopMonitor) Refused(error) {}
