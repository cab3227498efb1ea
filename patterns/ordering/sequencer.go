package ordering

import (
	"slices"
	"sync"
)

// sequencer admits batches in the order their deliveries were taken from the
// stream (by delivery tag), then lines them up per key: a batch runs when it is
// at the head of the line of every key it holds. All lines are filled in one
// admission order, so a batch holding several keys cannot deadlock with
// another.
type sequencer struct {
	mu      sync.Mutex
	streams map[string]*arrivals // by source queue
	lines   map[string][]*ticket // by key; a key with no ticket is forgotten
	// added counts the keys added to lines since it was last made: a Go map
	// keeps its buckets when emptied, so once idle after many keys it is
	// made anew and memory follows what is held, not what was ever held.
	added int
}

// remakeAfter is how many keys lines takes before an idle map is made anew.
const remakeAfter = 4096

// arrivals is one stream's gate: the delivery tags that reached ordering.
type arrivals struct {
	watermark uint64              // every tag up to it arrived, or was given up on
	ahead     map[uint64]struct{} // tags above the watermark that arrived
	pending   []*ticket           // arrived, waiting for lower tags
}

// ticket is one batch's place.
type ticket struct {
	queue    string
	keys     []string // distinct, sorted
	last     uint64   // the batch's highest delivery tag; 0: not gated
	heads    int      // how many of its lines it heads
	admitted chan struct{}
	ready    chan struct{}
	isIn     bool // admitted to its lines
	isReady  bool
}

func newSequencer() *sequencer {
	return &sequencer{streams: map[string]*arrivals{}, lines: map[string][]*ticket{}}
}

// arrive records deliveries that reached ordering together, one ticket per
// group: groups[i] holds the delivery tags (nil when they cannot order it)
// and keys of ticket i. A ticket is admitted at once when nothing before it is
// missing.
func (s *sequencer) arrive(queue string, groups []group) []*ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	tickets := make([]*ticket, len(groups))
	var a *arrivals
	for i, g := range groups {
		t := &ticket{queue: queue, keys: g.keys, admitted: make(chan struct{}), ready: make(chan struct{})}
		tickets[i] = t
		if len(g.tags) == 0 {
			s.admit(t)
			continue
		}
		if a == nil {
			a = s.streams[queue]
			if a == nil {
				a = &arrivals{ahead: map[uint64]struct{}{}}
				s.streams[queue] = a
			}
		}
		if slices.Contains(g.tags, 1) && a.watermark > 0 {
			// Tag 1 opens a new channel (the subscription reconnected): its
			// tags start again.
			a.watermark = 0
			clear(a.ahead)
		}
		for _, tag := range g.tags {
			t.last = max(t.last, tag)
			if tag > a.watermark {
				a.ahead[tag] = struct{}{}
			}
		}
		a.pending = append(a.pending, t)
	}
	if a != nil {
		s.advance(a)
	}
	return tickets
}

// group is what one ticket holds: delivery tags and distinct keys.
type group struct {
	tags []uint64
	keys []string
}

// advance moves the watermark over the tags that arrived and admits, lowest
// first, the pending batches it passed.
func (s *sequencer) advance(a *arrivals) {
	for {
		if _, ok := a.ahead[a.watermark+1]; !ok {
			break
		}
		delete(a.ahead, a.watermark+1)
		a.watermark++
	}
	var passed []*ticket
	kept := a.pending[:0]
	for _, t := range a.pending {
		if t.last <= a.watermark {
			passed = append(passed, t)
		} else {
			kept = append(kept, t)
		}
	}
	clear(a.pending[len(kept):])
	a.pending = kept
	slices.SortFunc(passed, func(x, y *ticket) int {
		switch {
		case x.last < y.last:
			return -1
		case x.last > y.last:
			return 1
		}
		return 0
	})
	for _, t := range passed {
		s.admit(t)
	}
}

// force gives up waiting for the tags below t's: the watermark moves up to
// its last tag, and t is admitted (with whatever else that passes). It
// reports whether t was still waiting.
func (s *sequencer) force(t *ticket) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.isIn {
		return false
	}
	a := s.streams[t.queue]
	if t.last > a.watermark {
		a.watermark = t.last
		for tag := range a.ahead {
			if tag <= a.watermark {
				delete(a.ahead, tag)
			}
		}
	}
	s.advance(a)
	return true
}

// admit puts t at the end of each of its keys' lines.
func (s *sequencer) admit(t *ticket) {
	t.isIn = true
	close(t.admitted)
	for _, key := range t.keys {
		if _, held := s.lines[key]; !held {
			s.added++
		}
		line := append(s.lines[key], t)
		s.lines[key] = line
		if len(line) == 1 {
			t.heads++
		}
	}
	s.readyIfHead(t)
}

func (s *sequencer) readyIfHead(t *ticket) {
	if !t.isReady && t.heads == len(t.keys) {
		t.isReady = true
		close(t.ready)
	}
}

// leave takes t out of every line it is in (it finished, or gave up waiting)
// and out of its stream's pending batches; the next in each line moves up.
func (s *sequencer) leave(t *ticket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !t.isIn {
		if a := s.streams[t.queue]; a != nil {
			a.pending = slices.DeleteFunc(a.pending, func(p *ticket) bool { return p == t })
		}
		return
	}
	for _, key := range t.keys {
		line := s.lines[key]
		i := slices.Index(line, t)
		if i < 0 {
			continue
		}
		line = slices.Delete(line, i, i+1)
		if len(line) == 0 {
			delete(s.lines, key)
			continue
		}
		s.lines[key] = line
		if i == 0 {
			line[0].heads++
			s.readyIfHead(line[0])
		}
	}
	if len(s.lines) == 0 && s.added > remakeAfter {
		s.lines, s.added = map[string][]*ticket{}, 0
	}
}

// size reports the keys held and the batches pending, for tests.
func (s *sequencer) size() (keys, pending int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.streams {
		pending += len(a.pending) + len(a.ahead)
	}
	return len(s.lines), pending
}
