package console

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The bounds of a payload preview, in bytes of the payload.
const (
	listPreview   = 300
	detailPreview = 64 << 10
	hexPreview    = 512
)

// preview is a payload as the console shows it: always text (the template
// escapes it), cut to a bound, with how large the payload was.
type preview struct {
	Text   string
	Size   int
	Cut    bool
	Binary bool
}

// previewOf renders at most limit bytes of payload as text: valid UTF-8
// with control characters written as escapes, or, for a payload that is not
// text, a hex dump of its first bytes. Nothing of it is markup: a page puts
// it through html/template, which escapes it.
func previewOf(payload []byte, limit int) preview {
	p := preview{Size: len(payload)}
	if binary(payload) {
		p.Binary = true
		n := min(len(payload), hexPreview, max(limit/10, 16))
		p.Text, p.Cut = hexDump(payload[:n]), n < len(payload)
		return p
	}
	sample := payload
	if len(sample) > limit {
		cut := limit
		for cut > 0 && cut > limit-utf8.UTFMax && !utf8.RuneStart(sample[cut]) {
			cut--
		}
		sample, p.Cut = sample[:cut], true
	}
	var b strings.Builder
	b.Grow(len(sample))
	for len(sample) > 0 {
		r, size := utf8.DecodeRune(sample)
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, sample[0])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		sample = sample[size:]
	}
	p.Text = b.String()
	return p
}

// binary reports a payload whose first bytes are not text: a NUL, or more
// than one in four that is a control byte or not UTF-8.
func binary(payload []byte) bool {
	sample := payload[:min(len(payload), 1024)]
	odd := 0
	for len(sample) > 0 {
		r, size := utf8.DecodeRune(sample)
		switch {
		case r == 0:
			return true
		case r == utf8.RuneError && size <= 1:
			odd++
		case r < 0x20 && r != '\n' && r != '\t' && r != '\r':
			odd++
		}
		sample = sample[size:]
	}
	return odd*4 > min(len(payload), 1024)
}

// hexDump writes b sixteen bytes a line: offset, bytes, printable ASCII.
func hexDump(b []byte) string {
	var out strings.Builder
	for offset := 0; offset < len(b); offset += 16 {
		line := b[offset:min(offset+16, len(b))]
		fmt.Fprintf(&out, "%08x ", offset)
		for i := range 16 {
			if i < len(line) {
				fmt.Fprintf(&out, " %02x", line[i])
			} else {
				out.WriteString("   ")
			}
		}
		out.WriteString("  |")
		for _, c := range line {
			if c < 0x20 || c > 0x7e {
				c = '.'
			}
			out.WriteByte(c)
		}
		out.WriteString("|\n")
	}
	return out.String()
}
