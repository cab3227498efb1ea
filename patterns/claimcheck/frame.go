package claimcheck

import "unicode/utf8"

// The three framing bytes every AceMQ library writes before a body: a magic
// byte, the framing version, then the form of what follows.
const (
	magic       byte = 0xAC
	version     byte = 0x01
	formInline  byte = 0x00
	formClaim   byte = 0x01
	frameLength      = 3
)

// frame splits body into its form and what follows the three framing bytes.
// framed is false for a body that does not start with a known frame (an
// unframed body, which the delegate reads as it is, or a form this version
// does not know).
func frame(body []byte) (form byte, rest []byte, framed bool) {
	if len(body) < frameLength || body[0] != magic || body[1] != version {
		return 0, nil, false
	}
	switch body[2] {
	case formInline, formClaim:
		return body[2], body[frameLength:], true
	}
	return 0, nil, false
}

// IsClaimChecked reports whether body is a claim check: the framing
// 0xAC 0x01 0x01 followed by a store key. An inline or unframed body is not.
func IsClaimChecked(body []byte) bool {
	form, _, framed := frame(body)
	return framed && form == formClaim
}

// KeyOf returns the store key a claim-checked body refers to, without
// fetching it, so an operator can ask which object a message needs and
// whether it is still there. ok is false for an inline or unframed body, and
// for a claim check whose key is empty or not UTF-8 (which no store issued).
func KeyOf(body []byte) (key string, ok bool) {
	form, rest, framed := frame(body)
	if !framed || form != formClaim {
		return "", false
	}
	return keyFrom(rest)
}

// keyFrom reads the key that follows a claim frame: bare UTF-8, not empty.
func keyFrom(rest []byte) (string, bool) {
	if len(rest) == 0 || !utf8.Valid(rest) {
		return "", false
	}
	return string(rest), true
}

// inline frames payload as travelling in the body: 0xAC 0x01 0x00 + payload.
func inline(payload []byte) []byte {
	body := make([]byte, frameLength+len(payload))
	body[0], body[1], body[2] = magic, version, formInline
	copy(body[frameLength:], payload)
	return body
}

// inlineFrame is the inline form's three bytes, for serialization.JSON to
// write in front of its payload.
var inlineFrame = string([]byte{magic, version, formInline})

// claim frames key as a claim check: 0xAC 0x01 0x01 + key as bare UTF-8.
func claim(key string) []byte {
	body := make([]byte, frameLength+len(key))
	body[0], body[1], body[2] = magic, version, formClaim
	copy(body[frameLength:], key)
	return body
}
