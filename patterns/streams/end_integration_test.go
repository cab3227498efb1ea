package streams

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/warrenmq/messaging/internal/testenv"
)

// A checkpoint saved for an earlier stream of the same name lies beyond the
// new stream's end: the broker would accept it and deliver nothing until the
// stream grew that far. Read says so instead, naming both offsets, whether
// the stream holds fewer messages or none.
func TestAnOffsetBeyondTheStreamsEndIsRefusedNotWaitedOn(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	for _, c := range []struct {
		held int
		from uint64
	}{{held: 30, from: 5000}, {held: 0, from: 1}} {
		transport, stream := brokerStream(t, url, "beyond", Retention{MaxAge: time.Hour})
		if c.held > 0 {
			publish(t, transport, stream, ids("beyond", 0, c.held)...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		started := time.Now()
		r, err := Read(ctx, transport, stream, newSeen().handler(), Options.From(FromOffset(c.from)), Options.Logger(quiet))
		cancel()
		if r != nil {
			_ = r.Close()
		}
		var beyond *OffsetBeyondEndError
		if !errors.As(err, &beyond) || beyond.Offset != c.from || beyond.Next != uint64(c.held) || beyond.Stream != stream {
			t.Fatalf("Read from offset %d of a stream of %d messages: %v, want an OffsetBeyondEndError naming %d and %d", c.from, c.held, err, c.from, c.held)
		}
		if took := time.Since(started); took > 5*time.Second {
			t.Fatalf("finding the end of a stream of %d messages took %s", c.held, took)
		}
	}
}

// A projection that had read everything resumes at the stream's next offset:
// that is the end, not beyond it, and what is appended next is read.
func TestAnOffsetAtTheStreamsEndReadsWhatComesNext(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "atend", Retention{MaxAge: time.Hour})
	publish(t, transport, stream, ids("old", 0, 40)...)
	s := newSeen()
	read(t, transport, stream, s.handler(), Options.From(FromOffset(40)))
	publish(t, transport, stream, ids("new", 0, 3)...)
	s.waitFor(t, "the three appended", func(s *seen) bool { return len(s.ids) >= 3 })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[0] != "new-00000" || s.offsets[0] != 40 {
		t.Fatalf("from offset 40 (the end): first %s at %d, want new-00000 at 40", s.ids[0], s.offsets[0])
	}
}

// A stream appended to without pause is never quiet: the probe still ends,
// within endLimit, even when the caller's context has no deadline.
func TestTheEndProbeIsBoundedOnAStreamThatNeverGoesQuiet(t *testing.T) {
	t.Parallel()
	url := testenv.Broker(t)
	transport, stream := brokerStream(t, url, "busy", Retention{MaxAge: time.Hour})
	publish(t, transport, stream, ids("busy", 0, 10)...)
	stop := make(chan struct{})
	appended := make(chan struct{})
	go func() { // appends a message every 100 ms until the probe has ended
		defer close(appended)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				publish(t, transport, stream, fmt.Sprint("more-", i))
			}
		}
	}()
	started := time.Now()
	_, err := Read(context.Background(), transport, stream, newSeen().handler(), Options.From(FromOffset(1_000_000)), Options.Logger(quiet))
	close(stop)
	<-appended
	var beyond *OffsetBeyondEndError
	if !errors.As(err, &beyond) || beyond.Next < 10 {
		t.Fatalf("Read from offset 1,000,000 of a stream appended to all along: %v, want an OffsetBeyondEndError", err)
	}
	if took := time.Since(started); took > endLimit+3*time.Second {
		t.Fatalf("the probe took %s on a stream that never went quiet (limit %s)", took, endLimit)
	}
}
