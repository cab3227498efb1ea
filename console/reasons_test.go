package console

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestReasonsFixture(t *testing.T) {
	gunit.Run(new(ReasonsFixture), t)
}

type ReasonsFixture struct{ *gunit.Fixture }

func (f *ReasonsFixture) TestIdsAndNumbersAreFoldedAndWordsKept() {
	cases := map[string]string{
		"exhausted 5 attempts: payment service 503":               "exhausted # attempts: payment service #",
		"order 7c9e6679-7425-40de-944b-e07fc1f90ae7 not found":    "order {id} not found",
		"row 0x1f2e3d4c5b locked after 2.5s":                      "row {id} locked after #s",
		"dead beef cafe":                                          "dead beef cafe",
		"timeout at 12:04:05 calling https://pay.example:8443/v1": "timeout at # calling https://pay.example:#/v#",
		"  the   courier\n refused  ":                             "the courier refused",
		"":                                                        noReason,
		"message 9b04bfc44cbf4263ad5c209541203f99 of tenant t42":  "message {id} of tenant t#",
		"could not be decoded: invalid character '\\x00' looking for beginning of value": "could not be decoded: invalid character '\\x#' looking for beginning of value",
	}
	for reason, want := range cases {
		f.So(fold(reason), should.Equal, want)
	}
}

func (f *ReasonsFixture) TestALongReasonIsBoundedOnARuneBoundary() {
	folded := fold(strings.Repeat("é", 600))
	f.So(len(folded), should.BeLessThanOrEqualTo, maxReasonKey+len("…"))
	f.So(strings.HasSuffix(folded, "…"), should.BeTrue)
	f.So(strings.ToValidUTF8(folded, "?"), should.Equal, folded)
}

func (f *ReasonsFixture) TestAGroupingCountsFirstAndLastSeenAndOrdersByCount() {
	g := newGrouping()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		g.add(fmt.Sprintf("card declined for %d", i), at.Add(time.Duration(i)*time.Minute))
	}
	for i := range 9 {
		g.add(fmt.Sprintf("timeout after %dms", i), at.Add(-time.Duration(i)*time.Hour))
	}
	groups := g.groups()
	f.So(len(groups), should.Equal, 2)
	f.So(groups[0].Reason, should.Equal, "timeout after #ms")
	f.So(groups[0].Count, should.Equal, 9)
	f.So(groups[0].First, should.Equal, at.Add(-8*time.Hour))
	f.So(groups[0].Last, should.Equal, at)
	f.So(groups[1].Example, should.Equal, "card declined for 0")
	f.So(groups[1].Last, should.Equal, at.Add(4*time.Minute))
}

func (f *ReasonsFixture) TestAGroupingKeepsAtMostMaxGroupsAndCountsTheRest() {
	g := newGrouping()
	for i := range maxGroups + 25 {
		g.add("reason "+strings.Repeat("x", i+1), time.Time{})
	}
	f.So(len(g.groups()), should.Equal, maxGroups)
	f.So(g.overflow, should.Equal, 25)
}

func (f *ReasonsFixture) TestAPreviewIsTextCutOnARuneBoundary() {
	p := previewOf([]byte("ééééé"), 5)
	f.So(p.Text, should.Equal, "éé")
	f.So(p.Cut, should.BeTrue)
	f.So(p.Size, should.Equal, 10)
	f.So(previewOf([]byte("line\nnext\ttab\r"), 100).Text, should.Equal, "line\nnext\ttab\\u000d")
	f.So(previewOf(nil, 100), should.Resemble, preview{})
}

func FuzzPreviewIsAlwaysValidUTF8AndBounded(f *testing.F) {
	f.Add([]byte("<script>alert(1)</script>"), 300)
	f.Add([]byte{0xff, 0xfe, 0, 1}, 16)
	f.Add([]byte("caf\xe9"), 3)
	f.Fuzz(func(t *testing.T, payload []byte, limit int) {
		limit = max(1, limit%4096)
		p := previewOf(payload, limit)
		if !utf8.ValidString(p.Text) {
			t.Fatalf("the preview is not valid UTF-8: %q", p.Text)
		}
		if len(p.Text) > 8*limit+len(hexDump(payload[:min(len(payload), hexPreview)])) {
			t.Fatalf("a preview of %d bytes for a limit of %d", len(p.Text), limit)
		}
		if p.Size != len(payload) {
			t.Fatalf("size %d, want %d", p.Size, len(payload))
		}
	})
}

func FuzzFoldIsStable(f *testing.F) {
	f.Add("exhausted 5 attempts: payment service 503")
	f.Add("\xff\x00 0x")
	f.Fuzz(func(t *testing.T, reason string) {
		once := fold(reason)
		if !utf8.ValidString(once) {
			t.Fatalf("fold(%q) is not valid UTF-8: %q", reason, once)
		}
		if len(once) > maxReasonKey+len("…") {
			t.Fatalf("fold(%q) is %d bytes", reason, len(once))
		}
	})
}
