package retrypolicy

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// RetryExchange is the durable direct exchange every rung dead-letters into
// when its TTL expires; each source queue is bound to it under its own name,
// which is how an expired message finds its way back.
const RetryExchange = "acemq.retry"

// Rung is one broker-side wait: a classic durable queue, named
// {Source}.retry.{d}, whose messages expire after TTL and are dead-lettered
// through RetryExchange back to Source.
type Rung struct {
	// Name is the rung queue's name, RungName(Source, TTL).
	Name string
	// Source is the queue the rung returns its messages to.
	Source string
	// TTL is how long the rung holds a message: a whole number of seconds,
	// at least 1 s, and never shorter than the waits it holds.
	TTL time.Duration
}

// Arguments are the rung queue's declaration arguments, exactly the three of
// RungArguments.
func (r Rung) Arguments() map[string]any {
	return RungArguments(r.Source, r.TTL)
}

// RungArguments are the declaration arguments of a rung that holds messages
// for ttl and returns them to source: exactly three, and no x-queue-type (the
// rung is classic). x-message-ttl is ttl in whole milliseconds as an int64;
// x-dead-letter-exchange is RetryExchange; x-dead-letter-routing-key is
// source. Any other argument, or another type, makes the declaration
// disagree with other services' and the broker refuse it with
// PRECONDITION_FAILED. The map converts to an amqp091 Table as it is.
func RungArguments(source string, ttl time.Duration) map[string]any {
	return map[string]any{
		"x-message-ttl":             ttl.Milliseconds(),
		"x-dead-letter-exchange":    RetryExchange,
		"x-dead-letter-routing-key": source,
	}
}

// RungName names the rung for queue and delay, {queue}.retry.{d}, with d the
// delay in whole seconds (the fraction dropped): Nh when it divides into
// hours, else Nm when it divides into minutes, else Ns, so 80 s is "80s", not
// "1m20s". A delay under a second is "0s". Rungs and RungFor only name
// whole-second TTLs, so two rungs of a ladder never share a name.
func RungName(queue string, delay time.Duration) string {
	return queue + ".retry." + wholeSeconds(int64(delay/time.Second))
}

func wholeSeconds(seconds int64) string {
	switch {
	case seconds <= 0:
		return "0s"
	case seconds%3600 == 0:
		return strconv.FormatInt(seconds/3600, 10) + "h"
	case seconds%60 == 0:
		return strconv.FormatInt(seconds/60, 10) + "m"
	default:
		return strconv.FormatInt(seconds, 10) + "s"
	}
}

// Rungs is the ladder of rungs queue needs for this policy, shortest first:
// one per distinct rung among the scheduled waits that InBroker holds by the
// broker. A wait is held by the rung of its whole seconds rounded up, so
// 40 s needs {queue}.retry.40s and 30.5 s needs {queue}.retry.31s. For
// Exponential(6, 10*time.Second, 5*time.Minute) with the default threshold
// the ladder is orders.retry.40s, orders.retry.80s and orders.retry.160s. It
// is empty when no wait reaches the broker, and then nothing needs declaring.
func (p Policy) Rungs(queue string) []Rung {
	var rungs []Rung
	for _, delay := range p.Schedule() {
		if !p.InBroker(delay) {
			continue
		}
		ttl := ceilSecond(delay)
		if slices.ContainsFunc(rungs, func(r Rung) bool { return r.TTL == ttl }) {
			continue
		}
		rungs = append(rungs, Rung{Name: RungName(queue, ttl), Source: queue, TTL: ttl})
	}
	slices.SortFunc(rungs, func(a, b Rung) int { return cmp.Compare(a.TTL, b.TTL) })
	return rungs
}

// RungFor picks the rung of queue's ladder that holds a wait of delay: the
// shortest rung at least as long as delay, or the longest rung when delay is
// longer than every rung. It reports false, with the zero Rung, when the
// ladder is empty: then the wait can only be held in the process.
func (p Policy) RungFor(queue string, delay time.Duration) (Rung, bool) {
	rungs := p.Rungs(queue)
	if len(rungs) == 0 {
		return Rung{}, false
	}
	for _, r := range rungs {
		if r.TTL >= delay {
			return r, true
		}
	}
	return rungs[len(rungs)-1], true
}

// ceilSecond rounds a positive delay up to a whole second, at least 1 s;
// near the largest Duration it rounds down instead of overflowing.
func ceilSecond(delay time.Duration) time.Duration {
	seconds := int64(delay / time.Second)
	if delay%time.Second != 0 || seconds == 0 {
		seconds++
	}
	if seconds > math.MaxInt64/int64(time.Second) {
		seconds = math.MaxInt64 / int64(time.Second)
	}
	return time.Duration(seconds) * time.Second
}

// CheckRung reports why a transport must not declare rung as queue's retry
// rung holding ttl: a name missing, the rung named as its own queue (its
// messages would loop), a ttl that is not a whole number of seconds (at least
// one), or a name other than RungName(queue, ttl), which would let two waits
// share a name with different TTLs (the broker refuses that with
// PRECONDITION_FAILED). Every transport's DeclareRetryRung checks it first.
func CheckRung(queue, rung string, ttl time.Duration) error {
	switch {
	case queue == "" || rung == "":
		return fmt.Errorf("declare retry rung %q for queue %q: both names are required", rung, queue)
	case queue == rung:
		return fmt.Errorf("declare retry rung %q for queue %q: the rung must be a queue of its own, or messages would loop", rung, queue)
	case ttl < time.Second || ttl%time.Second != 0:
		return fmt.Errorf("declare retry rung %q for queue %q: the delay %s is not a whole number of seconds, at least 1s; take the rung from retrypolicy.Policy.Rungs or RungFor, which round a wait up to whole seconds", rung, queue, ttl)
	case rung != RungName(queue, ttl):
		return fmt.Errorf("declare retry rung %q for queue %q: a rung holding %s must be named %q (retrypolicy.RungName), so that its name says its TTL and no two waits share a name", rung, queue, ttl, RungName(queue, ttl))
	}
	return nil
}
