package redact

import (
	"strings"
	"testing"
)

func TestTextMasksAPercentEncodedPasswordInBothForms(t *testing.T) {
	address := "amqp://guest:p%23a%40s%3As@127.0.0.1:5672/"
	text := Text("dial "+address+" with p#a@s:s and p%23a%40s%3As", address)
	for _, secret := range []string{"p#a@s:s", "p%23a%40s%3As"} {
		if strings.Contains(text, secret) {
			t.Errorf("%q still holds %q", text, secret)
		}
	}
	if !strings.Contains(text, "guest:"+Mask+"@127.0.0.1:5672") {
		t.Errorf("%q lost the address's shape", text)
	}
}

func TestAddressMasksAPasswordHoldingReservedCharacters(t *testing.T) {
	for address, want := range map[string]string{
		"amqp://guest:p#a@s:s@127.0.0.1:5672/":  "amqp://guest:" + Mask + "@127.0.0.1:5672/",
		"root:p#a@s:s@tcp(127.0.0.1:3306)/test": "root:" + Mask + "@tcp(127.0.0.1:3306)/test",
	} {
		if got := Address(address); got != want {
			t.Errorf("Address(%q) = %q, want %q", address, got, want)
		}
	}
}
