package console

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/warrenmq/messaging/internal/wire"
)

// maxReasonKey bounds the folded reason a group is known by, in bytes: two
// reasons that agree that far are one group.
const maxReasonKey = 512

// noReason is the group of messages that carry no x-acemq-error.
const noReason = "(no reason recorded)"

var (
	uuidPattern   = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	hexPattern    = regexp.MustCompile(`\b(?:0x)?[0-9a-fA-F]*[0-9][0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*\b|\b(?:0x)?[0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*[0-9][0-9a-fA-F]*\b`)
	numberPattern = regexp.MustCompile(`[0-9]+(?:[.,:][0-9]+)*`)
)

// fold is the reason a message was set aside with its ids and numbers
// replaced, so that 3,000 "exhausted 5 attempts: payment service 503 for
// order 8e1f..." are one group: "exhausted # attempts: payment service # for
// order {id}". White space is collapsed and the text bounded.
func fold(reason string) string {
	reason = strings.Join(strings.Fields(strings.ToValidUTF8(reason, "\uFFFD")), " ")
	if reason == "" {
		return noReason
	}
	reason = uuidPattern.ReplaceAllString(reason, "{id}")
	reason = hexPattern.ReplaceAllStringFunc(reason, func(word string) string {
		if len(strings.TrimPrefix(word, "0x")) < 8 {
			return word // a short word such as "dead" or "5a" stays; its digits fold below
		}
		return "{id}"
	})
	reason = numberPattern.ReplaceAllString(reason, "#")
	return bounded(reason, maxReasonKey)
}

// groupKey names a folded reason in a link.
func groupKey(folded string) string {
	sum := sha256.Sum256([]byte(folded))
	return hex.EncodeToString(sum[:8])
}

// maxGroups bounds the groups one read of a queue keeps: the reasons past it
// are counted together, so a queue of a million distinct reasons cannot
// grow the console's memory.
const maxGroups = 500

// group is the messages of one folded reason among those read.
type group struct {
	Key     string
	Reason  string // folded
	Example string // the first message's reason as it was
	Count   int
	First   time.Time // the earliest first seen among them
	Last    time.Time // the latest
}

// grouping counts messages by folded reason, at most maxGroups of them.
type grouping struct {
	byKey    map[string]*group
	order    []*group
	overflow int // messages whose reason came after maxGroups others
}

func newGrouping() *grouping { return &grouping{byKey: map[string]*group{}} }

// add counts one message with this (redacted) reason, seen at seen.
func (g *grouping) add(reason string, seen time.Time) {
	folded := fold(reason)
	key := groupKey(folded)
	found := g.byKey[key]
	if found == nil {
		if len(g.order) == maxGroups {
			g.overflow++
			return
		}
		found = &group{Key: key, Reason: folded, Example: bounded(reason, maxReasonKey)}
		g.byKey[key] = found
		g.order = append(g.order, found)
	}
	found.Count++
	if !seen.IsZero() && (found.First.IsZero() || seen.Before(found.First)) {
		found.First = seen
	}
	if seen.After(found.Last) {
		found.Last = seen
	}
}

// groups returns the groups, the largest first (in the order first met when
// counts are equal).
func (g *grouping) groups() []group {
	list := make([]group, len(g.order))
	for i, found := range g.order {
		list[i] = *found
	}
	slices.SortStableFunc(list, func(a, b group) int { return cmp.Compare(b.Count, a.Count) })
	return list
}

// bounded cuts s to at most n bytes on a rune boundary (wire.Cut), marking
// the cut.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return wire.Cut(s, n) + "…"
}
