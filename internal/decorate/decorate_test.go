package decorate

import (
	"errors"
	"strings"
	"testing"
)

type opened interface{ Name() string }

type thing struct{ name string }

func (t thing) Name() string { return t.name }

type wrapped struct{ opened }

func (w wrapped) Name() string { return "wrapped " + w.opened.Name() }

func wrap(inner opened) opened { return wrapped{inner} }

func TestOpenedWrapsWhatTheLayerOpened(t *testing.T) {
	got, err := Opened[opened]("tracing", "writer", thing{"w"}, nil, wrap)
	if err != nil || got.Name() != "wrapped w" {
		t.Fatalf("Opened = %v, %v; want the wrapped writer", got, err)
	}
}

func TestOpenedPassesTheLayersErrorOn(t *testing.T) {
	failure := errors.New("refused")
	got, err := Opened[opened]("tracing", "writer", thing{"w"}, failure, wrap)
	if got != nil || !errors.Is(err, failure) {
		t.Fatalf("Opened = %v, %v; want nil and the layer's error", got, err)
	}
}

func TestOpenedRefusesALayerThatReturnedNothing(t *testing.T) {
	got, err := Opened[opened]("tracing", "writer", nil, nil, wrap)
	if got != nil || err == nil || !strings.Contains(err.Error(), "tracing: the wrapped layer returned no writer and no error") {
		t.Fatalf("Opened = %v, %v; want nil and an error naming the broken layer", got, err)
	}
}
