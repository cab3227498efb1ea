// Package redact removes credentials from addresses and from any text that may
// quote one (errors, log lines, /status, the CLI). It does not parse the
// address: a password holding '#', '@', ':' or '/' is masked all the same, and
// when in doubt it masks more, never less.
package redact

import (
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Mask replaces a secret.
const Mask = "xxxxx"

// keyValuePassword finds password=... in key=value connection strings
// (PostgreSQL DSNs, query parameters).
var keyValuePassword = regexp.MustCompile(`(?i)(password|passwd|pwd)=('[^']*'|"[^"]*"|[^\s&;]*)`)

// urlUserinfo finds the password of a URL quoted anywhere in a text:
// scheme://user:secret@... up to the last '@' before the next white space, so
// that a password holding '@', '#', ':' or '/' is masked whole.
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)[^\s]*@`)

// dsnUserinfo finds the password of a Go MySQL DSN quoted anywhere in a text:
// user:secret@tcp(...), @unix(...) or @udp(...).
var dsnUserinfo = regexp.MustCompile(`((?:^|[\s"'(=])[^\s:/@"'(=]+:)[^\s]*@((?:tcp|tcp4|tcp6|unix|udp)\()`)

// scheme finds a URL scheme at the start of an address.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*://`)

// Address returns addr with the password of its user information masked:
// "amqp://guest:p#ss@host/" gives "amqp://guest:xxxxx@host/", and a MySQL DSN
// "root:pw@tcp(db)/test" gives "root:xxxxx@tcp(db)/test". The user info is
// everything between the scheme and the last '@', so a password that itself
// holds '@', '#' or '/' is masked whole.
func Address(addr string) string {
	out := keyValuePassword.ReplaceAllString(addr, "${1}="+Mask)
	start := userinfoStart(out)
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

// userinfoStart is where an address's user information begins: after its
// scheme when it starts with one, else at its start (a MySQL DSN). A "://"
// later in the address (in a query parameter) is not a scheme.
func userinfoStart(addr string) int {
	return len(scheme.FindString(addr))
}

// Text returns text with every occurrence of each address's password masked
// (also URL-escaped, unescaped and quoted forms of it, as a parser or a driver
// may render it), every address itself redacted, and any other URL or DSN
// password or password=... found in the text masked too, for an error or log
// line that may quote an address (a parse error, a dial error) in whole or in
// part.
func Text(text string, addrs ...string) string {
	var secrets []string
	for _, addr := range addrs {
		if addr == "" {
			continue
		}
		text = strings.ReplaceAll(text, addr, Address(addr))
		for _, secret := range passwords(addr) {
			secrets = append(secrets, forms(secret)...)
		}
	}
	// Longest first, so that a secret holding another is masked whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, secret := range secrets {
		text = strings.ReplaceAll(text, secret, Mask)
	}
	text = keyValuePassword.ReplaceAllString(text, "${1}="+Mask)
	text = urlUserinfo.ReplaceAllString(text, "${1}"+Mask+"@")
	return dsnUserinfo.ReplaceAllString(text, "${1}"+Mask+"@${2}")
}

// Password returns the password an address carries, found the way Address
// finds it, or "".
func Password(addr string) string {
	if found := passwords(addr); len(found) > 0 {
		return found[0]
	}
	return ""
}

// passwords returns every password an address carries: password=... values,
// then the user information's.
func passwords(addr string) []string {
	var found []string
	for _, m := range keyValuePassword.FindAllStringSubmatch(addr, -1) {
		if secret := strings.Trim(m[2], `'"`); secret != "" {
			found = append(found, secret)
		}
	}
	start := userinfoStart(addr)
	at := strings.LastIndex(addr[start:], "@")
	if at < 0 {
		return found
	}
	if _, password, _ := strings.Cut(addr[start:start+at], ":"); password != "" {
		found = append(found, password)
	}
	return found
}

// forms returns the ways a secret may appear in a text: as given, unescaped
// (a parser decodes %23 to '#'), escaped for a URL's user information, path
// or query (a URL's String re-encodes it), and quoted (%q, JSON).
func forms(secret string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(form string) {
		if form != "" && !seen[form] {
			seen[form] = true
			out = append(out, form)
		}
	}
	add(secret)
	if plain, err := url.PathUnescape(secret); err == nil {
		add(plain)
	}
	if plain, err := url.QueryUnescape(secret); err == nil {
		add(plain)
	}
	for _, s := range append([]string(nil), out...) {
		add(url.PathEscape(s))
		add(url.QueryEscape(s))
		add(strings.TrimPrefix(url.UserPassword("", s).String(), ":"))
		quoted := strconv.Quote(s)
		add(quoted[1 : len(quoted)-1])
	}
	return out
}

// Error returns err with its text passed through Text(text, addrs...), or err
// itself when nothing changes (and nil for nil). errors.Is and errors.As see
// through the result to everything err wraps, so masking never costs a caller
// its classification.
func Error(err error, addrs ...string) error {
	if err == nil {
		return nil
	}
	return WithText(err, Text(err.Error(), addrs...))
}

// WithText returns err reading text instead of its own (text being err's
// own, masked by the caller's rule), or err itself when they are the same.
// errors.Is and errors.As see through it to everything err wraps.
func WithText(err error, text string) error {
	if err == nil || text == err.Error() {
		return err
	}
	return &maskedError{text: text, err: err}
}

type maskedError struct {
	text string
	err  error
}

func (e *maskedError) Error() string { return e.text }
func (e *maskedError) Unwrap() error { return e.err }
