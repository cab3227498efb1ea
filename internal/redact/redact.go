// Package redact removes credentials from addresses and from any text that may
// quote one (errors, log lines, /status, the CLI). It does not parse the
// address: a password holding '#', '@', ':' or '/' is masked all the same, and
// when in doubt it masks more, never less.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "xxxxx"

// keyValuePassword finds password=... in key=value connection strings
// (PostgreSQL DSNs, query parameters).
var keyValuePassword = regexp.MustCompile(`(?i)(password|passwd|pwd)=('[^']*'|"[^"]*"|[^\s&;]*)`)

// Address returns addr with the password of its user information masked:
// "amqp://guest:p#ss@host/" gives "amqp://guest:xxxxx@host/", and a MySQL DSN
// "root:pw@tcp(db)/test" gives "root:xxxxx@tcp(db)/test". The user info is
// everything between the scheme and the last '@', so a password that itself
// holds '@', '#' or '/' is masked whole.
func Address(addr string) string {
	out := keyValuePassword.ReplaceAllString(addr, "${1}="+Mask)
	start := 0
	if i := strings.Index(out, "://"); i >= 0 {
		start = i + len("://")
	}
	at := strings.LastIndex(out[start:], "@")
	if at < 0 {
		return out
	}
	at += start
	userinfo := out[start:at]
	user, _, hasPassword := strings.Cut(userinfo, ":")
	if !hasPassword {
		return out
	}
	return out[:start] + user + ":" + Mask + out[at:]
}

// Text returns text with every occurrence of each address's password masked
// (as given and percent-decoded) and every address itself redacted, for an
// error or log line that may quote an address (a parse error, a dial error) in
// whole or in part.
func Text(text string, addrs ...string) string {
	for _, addr := range addrs {
		if addr == "" {
			continue
		}
		if secret := Password(addr); secret != "" {
			text = strings.ReplaceAll(text, secret, Mask)
			// A URI carries a password percent-encoded (p%23ss for p#ss); a
			// client that decoded it may quote it decoded.
			if decoded, err := url.PathUnescape(secret); err == nil && decoded != secret {
				text = strings.ReplaceAll(text, decoded, Mask)
			}
		}
		text = strings.ReplaceAll(text, addr, Address(addr))
	}
	return keyValuePassword.ReplaceAllString(text, "${1}="+Mask)
}

// Password returns the password an address carries, found the way Address
// finds it, or "".
func Password(addr string) string {
	if m := keyValuePassword.FindStringSubmatch(addr); m != nil && strings.Trim(m[2], `'"`) != "" {
		return strings.Trim(m[2], `'"`)
	}
	start := 0
	if i := strings.Index(addr, "://"); i >= 0 {
		start = i + len("://")
	}
	at := strings.LastIndex(addr[start:], "@")
	if at < 0 {
		return ""
	}
	_, password, _ := strings.Cut(addr[start:start+at], ":")
	return password
}
