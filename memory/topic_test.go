package memory

import (
	"strings"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestTopicFixture(t *testing.T) {
	gunit.Run(new(TopicFixture), t)
}

type TopicFixture struct {
	*gunit.Fixture
}

// topicCases are pinned word-by-word matches, as RabbitMQ's topic exchange
// routes them: "*" is exactly one word, "#" zero or more, the empty key has
// no words and every dot separates two (possibly empty) words.
var topicCases = []struct {
	pattern, key string
	matches      bool
}{
	{"orders.placed", "orders.placed", true},
	{"orders.placed", "orders.shipped", false},
	{"orders.placed", "Orders.placed", false},
	{"orders.*", "orders.placed", true},
	{"orders.*", "orders", false},
	{"orders.*", "orders.placed.eu", false},
	{"orders.#", "orders", true},
	{"orders.#", "orders.placed", true},
	{"orders.#", "orders.placed.eu", true},
	{"orders.#", "order", false},
	{"orders.#", "ordersx.placed", false},
	{"#", "", true},
	{"#", "orders", true},
	{"#", "a.b.c", true},
	{"*", "", false},
	{"*", "orders", true},
	{"*", "a.b", false},
	{"", "", true},
	{"", "orders", false},
	{"#.placed", "placed", true},
	{"#.placed", "orders.eu.placed", true},
	{"#.placed", "orders.placed.eu", false},
	{"*.*", "a.b", true},
	{"*.*", "a", false},
	{"a.#.b", "a.b", true},
	{"a.#.b", "a.x.y.b", true},
	{"a.#.b", "a.x.y.c", false},
	{"a.*.#", "a", false},
	{"a.*.#", "a.b", true},
	{"a.*.#", "a.b.c.d", true},
	{"#.#", "", true},
	{"#.#", "a.b.c", true},
	{"*.#.*", "a", false},
	{"*.#.*", "a.b", true},
	{"#.*", "", false},
	{"#.*", "a", true},
	{"a.*", "a.", true},
	{"*", ".", false},
	{"*.*", ".", true},
	{"a.b", "a.b.", false},
}

func (f *TopicFixture) TestPinnedCases() {
	f.So(len(topicCases), should.BeGreaterThanOrEqualTo, 26)
	for _, c := range topicCases {
		f.So(topicMatches(c.pattern, c.key), should.Equal, c.matches)
		if topicMatches(c.pattern, c.key) != c.matches {
			f.Errorf("pattern %q key %q: want %t", c.pattern, c.key, c.matches)
		}
	}
}

func (f *TopicFixture) TestTopicExchangeRoutesByPattern() {
	b := New()
	f.So(b.DeclareExchange("events", KindTopic, true), should.BeNil)
	for _, q := range []string{"all", "orders", "placed"} {
		f.So(b.DeclareQueue(q, QueueOptions{Durable: true}), should.BeNil)
	}
	f.So(b.Bind("all", "events", "#"), should.BeNil)
	f.So(b.Bind("orders", "events", "orders.#"), should.BeNil)
	f.So(b.Bind("placed", "events", "*.placed"), should.BeNil)

	for _, key := range []string{"orders", "orders.placed", "users.placed", "users.deleted"} {
		f.So(b.Publish(f.ctx(), ctxDispatch("events", key)), should.BeNil)
	}
	f.So(b.MessageCount("all"), should.Equal, 4)
	f.So(b.MessageCount("orders"), should.Equal, 2)
	f.So(b.MessageCount("placed"), should.Equal, 2)
}

// FuzzTopicMatches checks the matcher never panics and agrees with a plain
// backtracking reference on arbitrary patterns and keys.
func FuzzTopicMatches(f *testing.F) {
	for _, c := range topicCases {
		f.Add(c.pattern, c.key)
	}
	f.Add("#.#.#.a.#", "a.a.a.a.a")
	f.Fuzz(func(t *testing.T, pattern, key string) {
		p, k := topicWords(pattern), topicWords(key)
		if len(p) > 12 || len(k) > 12 {
			t.Skip("the reference backtracks exponentially on long inputs")
		}
		if got, want := topicMatches(pattern, key), referenceMatch(p, k); got != want {
			t.Fatalf("topicMatches(%q, %q) = %t; the reference says %t", pattern, key, got, want)
		}
	})
}

func referenceMatch(pattern, key []string) bool {
	if len(pattern) == 0 {
		return len(key) == 0
	}
	if pattern[0] == "#" {
		return referenceMatch(pattern[1:], key) || (len(key) > 0 && referenceMatch(pattern, key[1:]))
	}
	if len(key) == 0 {
		return false
	}
	return (pattern[0] == "*" || pattern[0] == key[0]) && referenceMatch(pattern[1:], key[1:])
}

func (f *TopicFixture) TestReferenceAgreesOnGeneratedInputs() {
	words := []string{"a", "b", "*", "#", ""}
	var patterns []string
	var build func(prefix []string, depth int)
	build = func(prefix []string, depth int) {
		patterns = append(patterns, strings.Join(prefix, "."))
		if depth == 0 {
			return
		}
		for _, w := range words {
			build(append(append([]string(nil), prefix...), w), depth-1)
		}
	}
	build(nil, 4)
	keys := []string{"", "a", "b", "a.b", "b.a", "a.a.a", "a.b.a.b", ".", "a.", ".a"}
	disagreements := 0
	for _, p := range patterns {
		for _, k := range keys {
			if topicMatches(p, k) != referenceMatch(topicWords(p), topicWords(k)) {
				disagreements++
			}
		}
	}
	f.So(disagreements, should.Equal, 0)
}
