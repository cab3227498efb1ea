package console

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The size of a chart, in SVG user units.
const (
	chartWidth  = 240
	chartHeight = 36
)

// chart is a queue's depth and net rate over the window, drawn on the
// server as two SVG polylines: nothing is loaded from anywhere, and no
// script runs.
type chart struct {
	Width, Height int
	Depth         string // polyline points of the depth
	Rate          string // polyline points of the net rate, about the zero line
	Zero          float64
	MaxDepth      int
	MaxRate       float64
	Points        int
	Window        time.Duration
}

// chartOf draws s's samples over the window ending at now.
func chartOf(s series, window time.Duration, now time.Time) chart {
	ch := chart{Width: chartWidth, Height: chartHeight, Zero: chartHeight / 2, Window: window}
	var present []sample
	for _, p := range s.Samples {
		if !p.Missing {
			present = append(present, p)
		}
	}
	ch.Points = len(present)
	if len(present) == 0 {
		return ch
	}
	x := func(at time.Time) float64 {
		left := now.Add(-window)
		return math.Max(0, math.Min(chartWidth, float64(at.Sub(left))/float64(window)*chartWidth))
	}
	for _, p := range present {
		ch.MaxDepth = max(ch.MaxDepth, p.Messages)
	}
	var depth, rate strings.Builder
	for i, p := range present {
		y := float64(chartHeight - 2)
		if ch.MaxDepth > 0 {
			y = 1 + float64(chartHeight-2)*(1-float64(p.Messages)/float64(ch.MaxDepth))
		}
		fmt.Fprintf(&depth, "%.1f,%.1f ", x(p.At), y)
		if i > 0 {
			if r := netRate(present[i-1], p); math.Abs(r) > ch.MaxRate {
				ch.MaxRate = math.Abs(r)
			}
		}
	}
	for i := 1; i < len(present); i++ {
		r := netRate(present[i-1], present[i])
		y := ch.Zero
		if ch.MaxRate > 0 {
			y = ch.Zero - r/ch.MaxRate*(ch.Zero-1)
		}
		fmt.Fprintf(&rate, "%.1f,%.1f ", x(present[i].At), y)
	}
	ch.Depth, ch.Rate = strings.TrimSpace(depth.String()), strings.TrimSpace(rate.String())
	return ch
}

// netRate is the depth's change per second from a to b.
func netRate(a, b sample) float64 {
	elapsed := b.At.Sub(a.At).Seconds()
	if elapsed <= 0 {
		return 0
	}
	return float64(b.Messages-a.Messages) / elapsed
}
