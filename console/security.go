package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// contentSecurityPolicy lets a page load nothing but the console's own
// stylesheet and submit forms only to the console: no script runs, from a
// message or from anywhere else, and the page cannot be framed.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// The cookies the console sets, HttpOnly and SameSite=Strict.
const (
	sessionCookie = "warrenmq_console_session"
	tokenCookie   = "warrenmq_console_token"
	csrfField     = "csrf"
)

// secure wraps the console's routes: the security headers on every
// response, the access token when one is configured, a session cookie that
// the CSRF token is bound to, and every POST checked for a same-origin
// request carrying that token.
func (c *Console) secure(next http.Handler) http.Handler {
	crossOrigin := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if !c.authorized(w, r) {
			return
		}
		session := c.session(w, r)
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost {
			c.problem(w, r, http.StatusMethodNotAllowed, "the console takes GET for pages and POST for actions")
			return
		}
		if !c.config.actions {
			c.problem(w, r, http.StatusForbidden, "this console is read-only: nothing was changed. Start it with actions enabled (warrenmq console -actions, or console.Options.Actions(true)) to replay or release")
			return
		}
		if err := crossOrigin.Check(r); err != nil {
			c.problem(w, r, http.StatusForbidden, "the action came from another site, so it was refused: nothing was changed")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if session == "" || !hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(c.csrf(session))) {
			c.problem(w, r, http.StatusForbidden, "the action's form is stale or came from elsewhere (its CSRF token does not match this session): nothing was changed. Reload the page and try again")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized checks the access token, when one is configured: a Bearer
// header, the cookie, or ?token= once, which sets the cookie and sends the
// browser to the same page without the token in its address.
func (c *Console) authorized(w http.ResponseWriter, r *http.Request) bool {
	want := c.config.token
	if want == "" {
		return true
	}
	matches := func(given string) bool {
		return given != "" && subtle.ConstantTimeCompare([]byte(given), []byte(want)) == 1
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && matches(bearer) {
		return true
	}
	if cookie, err := r.Cookie(tokenCookie); err == nil && matches(cookie.Value) {
		return true
	}
	if query := r.URL.Query(); matches(query.Get("token")) && r.Method == http.MethodGet {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: want, Path: c.config.mount, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		query.Del("token")
		target := *r.URL
		target.RawQuery = query.Encode()
		http.Redirect(w, r, target.RequestURI(), http.StatusSeeOther)
		return false
	}
	c.problem(w, r, http.StatusUnauthorized, "this console needs its access token: open the address it printed at start (…/?token=...), or send Authorization: Bearer TOKEN")
	return false
}

// session returns the request's session id, setting a new one on a page
// request that has none.
func (c *Console) session(w http.ResponseWriter, r *http.Request) string {
	if cookie, err := r.Cookie(sessionCookie); err == nil && len(cookie.Value) >= 16 {
		return cookie.Value
	}
	if r.Method != http.MethodGet {
		return ""
	}
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: c.config.mount, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	r.AddCookie(&http.Cookie{Name: sessionCookie, Value: id})
	return id
}

// csrf is the token the forms of a session carry.
func (c *Console) csrf(session string) string {
	mac := hmac.New(sha256.New, c.key)
	mac.Write([]byte("csrf:" + session))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// csrfFor is the token of the request's session ("" without one).
func (c *Console) csrfFor(r *http.Request) string {
	cookie, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	return c.csrf(cookie.Value)
}
