package encryption_test

import (
	"fmt"

	"github.com/warrenmq/messaging/serialization/encryption"
)

// Payment is a message whose contents the broker and its operators must not
// read.
type Payment struct {
	Account string `json:"account"`
	Cents   int64  `json:"cents"`
}

// Example encrypts a Payment with the publisher's current key and reads it
// with a consumer whose ring holds the old key and the new one, as during a
// rotation. Install the codecs with serialization.Options.Serializer and
// serialization.Options.AddDeserializer.
func Example() {
	old := encryption.Key{ID: "2025-12", Secret: make([]byte, 32)} // from your secret store
	fresh := encryption.Key{ID: "2026-01", Secret: []byte("0123456789abcdef0123456789abcdef")}
	publisherRing, err := encryption.NewKeyRing(fresh, old) // writes with 2026-01
	if err != nil {
		fmt.Println(err)
		return
	}
	consumerRing, _ := encryption.NewKeyRing(old, fresh) // reads both
	publisher, _ := encryption.New(nil, publisherRing)   // JSON inside
	consumer, _ := encryption.New(nil, consumerRing)

	body, err := publisher.Serialize(Payment{Account: "NL01-1234", Cents: 1250})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: % x | key %q | %d bytes of nonce, ciphertext and tag\n",
		publisher.ContentType(), body[:3], body[3:10], len(body[10:]))

	var payment Payment
	if err := consumer.Deserialize(body, &payment); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", payment)

	body[len(body)-1] ^= 1 // one bit changed on the way
	fmt.Println(consumer.Deserialize(body, &payment) != nil)
	// Output:
	// application/vnd.acemq.encrypted: ae 01 07 | key "2026-01" | 64 bytes of nonce, ciphertext and tag
	// {Account:NL01-1234 Cents:1250}
	// true
}
