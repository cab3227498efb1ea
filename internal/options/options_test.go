package options

import (
	"testing"
	"time"
)

type config struct{ a, b int }

type option func(*config)

func TestApplyRunsEachOptionInOrderAndSkipsNil(t *testing.T) {
	c := config{a: 1}
	Apply(&c, []option{func(c *config) { c.a = 2 }, nil, func(c *config) { c.b = c.a + 1 }, func(c *config) { c.a = 5 }})
	if c != (config{a: 5, b: 3}) {
		t.Fatalf("after the options: %+v, want {a:5 b:3}", c)
	}
	Apply[config, option](&c, nil)
	if c != (config{a: 5, b: 3}) {
		t.Fatalf("no options changed the config: %+v", c)
	}
}

type monitor interface{ name() string }

type named string

func (n named) name() string { return string(n) }

type uncomparable struct{ list []int }

func (uncomparable) name() string { return "uncomparable" }

func TestDefaultReplacesOnlyTheZeroValue(t *testing.T) {
	var unset monitor
	Default[monitor](&unset, named("default"))
	if unset == nil || unset.name() != "default" {
		t.Fatalf("a nil interface kept: %v, want the default", unset)
	}
	var given monitor = named("given")
	Default[monitor](&given, named("default"))
	if given.name() != "given" {
		t.Fatalf("a given interface replaced: %v", given)
	}
	var held monitor = uncomparable{list: []int{1}}
	Default[monitor](&held, named("default"))
	if held.name() != "uncomparable" {
		t.Fatalf("an interface holding an uncomparable value replaced: %v", held)
	}
	empty, text := "", "given"
	Default(&empty, "default")
	Default(&text, "default")
	if empty != "default" || text != "given" {
		t.Fatalf("strings after Default: %q, %q; want \"default\", \"given\"", empty, text)
	}
	var pointer *int
	Default(&pointer, new(int))
	if pointer == nil {
		t.Fatal("a nil pointer kept")
	}
}

func TestPositiveReplacesZeroAndNegative(t *testing.T) {
	zero, negative, positive := time.Duration(0), -time.Second, time.Millisecond
	for _, field := range []*time.Duration{&zero, &negative} {
		Positive(field, time.Minute)
	}
	Positive(&positive, time.Minute)
	if zero != time.Minute || negative != time.Minute || positive != time.Millisecond {
		t.Fatalf("durations after Positive: %v, %v, %v; want 1m, 1m, 1ms", zero, negative, positive)
	}
	count := 0
	Positive(&count, 8)
	if count != 8 {
		t.Fatalf("a zero count after Positive: %d, want 8", count)
	}
}

func TestNewBuildsFromTheZeroValue(t *testing.T) {
	c := New([]option{func(c *config) { c.a = 2 }, nil, func(c *config) { c.b = c.a * 3 }})
	if c != (config{a: 2, b: 6}) {
		t.Fatalf("built %+v, want {a:2 b:6}", c)
	}
	if none := New[config, option](nil); none != (config{}) {
		t.Fatalf("no options built %+v, want the zero value", none)
	}
}
