package options

import "testing"

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
