package memory

import "strings"

// topicWords splits a routing key or binding pattern into its words the way
// RabbitMQ does: the empty string has no words, and every dot separates two
// words, which may themselves be empty.
func topicWords(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ".")
}

// topicMatches reports whether a topic binding pattern matches a routing key,
// word by word: "*" matches exactly one word and "#" zero or more. It runs in
// time proportional to len(pattern words) * len(key words), however many "#"
// the pattern holds.
func topicMatches(pattern, key string) bool {
	p, k := topicWords(pattern), topicWords(key)
	// reach[j] is true when the pattern words consumed so far can match the
	// first j key words.
	reach := make([]bool, len(k)+1)
	next := make([]bool, len(k)+1)
	reach[0] = true
	for _, word := range p {
		clear(next)
		switch word {
		case "#":
			seen := false
			for j := range reach {
				seen = seen || reach[j]
				next[j] = seen
			}
		default:
			for j := 1; j <= len(k); j++ {
				next[j] = reach[j-1] && (word == "*" || word == k[j-1])
			}
		}
		reach, next = next, reach
	}
	return reach[len(k)]
}
