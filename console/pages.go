package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// pageNames are the pages, each assets/{name}.html over assets/layout.html.
var pageNames = []string{"overview", "queue", "group", "message", "job", "jobs", "outbox", "health", "problem"}

// pages are the parsed templates, one set per page.
var pages = parsePages()

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"number":   number,
		"when":     when,
		"ago":      func(t time.Time) string { return age(time.Since(t)) },
		"age":      age,
		"span":     span,
		"rate":     rate,
		"escape":   url.PathEscape,
		"add":      func(a, b int) int { return a + b },
		"setAside": setAside,
	}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/parts.html"))
	parsed := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		parsed[name] = template.Must(template.Must(base.Clone()).ParseFS(assets, "assets/"+name+".html"))
	}
	return parsed
}

// frame is what every page has around its own content.
type frame struct {
	Title   string
	Mount   string
	Section string
	Actions bool
	CSRF    string
	Now     time.Time
	Page    any
}

// render executes page name with data into a buffer, then writes it: a
// template that fails sends a plain error, never half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name, title, section string, data any) {
	var body bytes.Buffer
	f := frame{Title: title, Mount: c.config.mount, Section: section, Actions: c.config.actions, CSRF: c.csrfFor(r), Now: time.Now(), Page: data}
	if err := pages[name].ExecuteTemplate(&body, "layout.html", f); err != nil {
		c.config.logger.Error("Console page could not be rendered", "page", name, "error", c.redactErr(err))
		http.Error(w, "the console could not render this page; its log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body.Bytes())
}

// problem renders a page that says what went wrong and what to do.
func (c *Console) problem(w http.ResponseWriter, r *http.Request, status int, message string) {
	c.render(w, r, status, "problem", http.StatusText(status), "", c.redact(message))
}

// number writes n with thousands separators: 1,000,000.
func number(n any) string {
	var v int64
	switch n := n.(type) {
	case int:
		v = int64(n)
	case int64:
		v = n
	case uint64:
		v = int64(min(n, math.MaxInt64))
	default:
		return fmt.Sprint(n)
	}
	text := strconv.FormatInt(v, 10)
	sign := ""
	if v < 0 {
		sign, text = "-", text[1:]
	}
	var b strings.Builder
	for i, digit := range text {
		if i > 0 && (len(text)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(digit)
	}
	return sign + b.String()
}

// when is a time as a page shows it, in UTC; "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// age is d rounded for reading: 850ms, 42s, 3m10s, 5h2m.
func age(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// span writes a window as people say it: 15 minutes, 90 seconds, 2 hours.
func span(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hour(s)", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return age(d)
}

// rate writes a net rate per second with its sign.
func rate(r float64) string {
	switch {
	case math.Abs(r) < 0.05:
		return "steady"
	case r > 0:
		return fmt.Sprintf("+%.1f/s", r)
	}
	return fmt.Sprintf("%.1f/s", r)
}
