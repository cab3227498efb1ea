package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/replay"
)

// The summary of a replay: a group per verdict and set-aside reason, up to
// maxReasons of them (the rest counted under otherReasons, since a reason
// may name each message), each with its first firstIDs message ids.
const (
	maxReasons   = 20
	firstIDs     = 5
	otherReasons = "(other reasons)"
)

// reasonGroup is the messages of one verdict and set-aside reason, as the
// summary (and -json's reasons) lists them.
type reasonGroup struct {
	Verdict  string   `json:"verdict"`
	Reason   string   `json:"reason"`
	Count    int      `json:"count"`
	FirstIDs []string `json:"first_ids"`
}

// tally groups the messages a pass read by verdict and reason and, with
// each, keeps every one of them. It runs on the pass's goroutine.
type tally struct {
	each     bool
	groups   []*reasonGroup
	index    map[[2]string]*reasonGroup
	messages []replayedMessage
}

func newTally(each bool) *tally {
	return &tally{each: each, index: map[[2]string]*reasonGroup{}}
}

// add counts d under its verdict and reason.
func (t *tally) add(d messaging.Delivery, verdict replay.Verdict) {
	if t.each {
		t.messages = append(t.messages, replayedMessage{Verdict: string(verdict), ID: d.MessageID, Type: d.MessageType, Attempt: d.Attempt, Error: d.Error})
	}
	reason := strings.Join(strings.Fields(d.Error), " ")
	key := [2]string{string(verdict), reason}
	group, ok := t.index[key]
	if !ok && len(t.index) >= maxReasons {
		key[1] = otherReasons
		group, ok = t.index[key]
	}
	if !ok {
		group = &reasonGroup{Verdict: key[0], Reason: key[1], FirstIDs: []string{}}
		t.index[key] = group
		t.groups = append(t.groups, group)
	}
	group.Count++
	if len(group.FirstIDs) < firstIDs {
		group.FirstIDs = append(group.FirstIDs, d.MessageID)
	}
}

// sorted is the groups, moved before declined, the largest first.
func (t *tally) sorted() []*reasonGroup {
	groups := slices.Clone(t.groups)
	slices.SortStableFunc(groups, func(a, b *reasonGroup) int {
		if a.Verdict != b.Verdict {
			return strings.Compare(b.Verdict, a.Verdict) // "moved" before "declined"
		}
		return b.Count - a.Count
	})
	if groups == nil {
		groups = []*reasonGroup{}
	}
	return groups
}

// verdictWord is how a table names a verdict: move or skip in a dry run,
// moved or skipped otherwise.
func verdictWord(verdict string, dryRun bool) string {
	switch {
	case verdict == string(replay.Declined) && dryRun:
		return "skip"
	case verdict == string(replay.Declined):
		return "skipped"
	case dryRun:
		return "move"
	}
	return "moved"
}

// tableHeading is the first column's heading.
func tableHeading(dryRun bool) string {
	if dryRun {
		return "WOULD"
	}
	return "VERDICT"
}

// printReasons writes the summary by reason; nothing when nothing was read.
func printReasons(stdout io.Writer, report replayReport) error {
	if len(report.Reasons) == 0 {
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "%s\tCOUNT\tREASON SET ASIDE\tFIRST IDS\n", tableHeading(report.DryRun))
	listed := 0
	for _, g := range report.Reasons {
		ids := strings.Join(g.FirstIDs, ",")
		if g.Count > len(g.FirstIDs) {
			ids += ",…"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", verdictWord(g.Verdict, report.DryRun), g.Count, cell(g.Reason, 100), ids)
		listed += len(g.FirstIDs)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if listed < report.Moved+report.Skipped {
		fmt.Fprintln(stdout, "(-each lists every message)")
	}
	return nil
}

// printEach writes one line per message read.
func printEach(stdout io.Writer, report replayReport) error {
	if len(report.Messages) == 0 {
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "%s\tMESSAGE ID\tTYPE\tATTEMPT\tREASON SET ASIDE\n", tableHeading(report.DryRun))
	for _, m := range report.Messages {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", verdictWord(m.Verdict, report.DryRun), cell(m.ID, 40), cell(m.Type, 30), m.Attempt, cell(m.Error, 120))
	}
	return w.Flush()
}
