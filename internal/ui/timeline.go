package ui

import (
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// Timeline geometry, in SVG user units.
const (
	tlLabel  = 150.0 // width of the item names
	tlWidth  = 980.0 // whole width
	tlRow    = 24.0  // height of a row
	tlBar    = 14.0  // height of a bar
	tlAxis   = 28.0  // height of the time axis
	tlMinBar = 2.0   // the narrowest segment drawn
)

// timeline is a run's items as bars, in the order they can run: the
// assets in the job's order, then the derived items after their inputs.
type timeline struct {
	Start, End time.Time
	Width      float64
	Height     float64
	Rows       []timelineRow
	Ticks      []timelineTick
	Live       bool // the run is in flight: open bars end at now
}

type timelineRow struct {
	Asset   string
	Derived bool
	Inputs  []string
	State   string // PENDING when the item has no record
	Attempt int
	Error   string
	Y       float64 // the row's top
	// Times from the ledger; Enqueued is the earliest the item could be
	// enqueued (the run's opening, or its latest input's end).
	Enqueued, FirstClaim, LastClaim, Finished time.Time
	Segments                                  []segment
	Title                                     string  // the row's tooltip
	MarkX                                     float64 // where the attempt count goes: after the bars
}

// segment is one stretch of an item's life.
type segment struct {
	Class string // waiting, retried, the state's class
	X, W  float64
	Label string
}

type timelineTick struct {
	X     float64
	Label string
}

// pendingState is the state shown for an expected item without a record.
const pendingState = "PENDING"

// buildTimeline lays items of run out for j; now ends the bars of items
// still running when the run is in flight.
func buildTimeline(j baton.Job, run ledger.Run, items []ledger.Item, now time.Time) timeline {
	byAsset := make(map[string]ledger.Item, len(items))
	for _, it := range items {
		byAsset[it.Key.Asset] = it
	}
	tl := timeline{Start: run.OpenedAt.UTC(), Live: !run.State.Finished(), Width: tlWidth}
	if tl.Start.IsZero() || (!run.ID.Nominal.IsZero() && run.ID.Nominal.Before(tl.Start) && tl.Start.Sub(run.ID.Nominal) < time.Minute) {
		// A run opens right after its tick: start at the tick, so that the
		// bars read as time since the tick (what staleness measures).
		tl.Start = run.ID.Nominal.UTC()
	}
	end := tl.Start
	later := func(t time.Time) {
		if t.After(end) {
			end = t
		}
	}
	for _, it := range items {
		later(it.StartedAt)
		later(it.FinishedAt)
	}
	if tl.Live {
		later(now)
	}
	if !run.FinishedAt.IsZero() {
		later(run.FinishedAt)
	}
	if end.Sub(tl.Start) < 10*time.Millisecond {
		end = tl.Start.Add(10 * time.Millisecond)
	}
	tl.End = end

	var rows []timelineRow
	for _, a := range j.Assets {
		rows = append(rows, timelineRow{Asset: a, Enqueued: run.OpenedAt})
	}
	for _, d := range jobspec.DerivedOrder(j) {
		row := timelineRow{Asset: d.Name, Derived: true, Inputs: d.Inputs}
		ready := true
		for _, in := range d.Inputs {
			it, ok := byAsset[in]
			if !ok || it.State != ledger.ItemSucceeded {
				ready = false
				break
			}
			if it.FinishedAt.After(row.Enqueued) {
				row.Enqueued = it.FinishedAt
			}
		}
		if !ready {
			row.Enqueued = time.Time{}
		}
		rows = append(rows, row)
	}
	x := tl.x
	for i := range rows {
		r := &rows[i]
		r.Y = tlAxis + float64(i)*tlRow
		it, ok := byAsset[r.Asset]
		r.State = pendingState
		if ok {
			r.State, r.Attempt, r.Error = string(it.State), it.Attempt, it.Error
			r.FirstClaim, r.LastClaim, r.Finished = it.CreatedAt, it.StartedAt, it.FinishedAt
			if it.Attempt == 0 { // cancelled before any claim
				r.FirstClaim, r.LastClaim = time.Time{}, time.Time{}
			}
		}
		open := now
		if !tl.Live {
			open = tl.End
		}
		add := func(class string, from, to time.Time, label string) {
			if from.IsZero() || to.Before(from) {
				return
			}
			x0, x1 := x(from), x(to)
			r.Segments = append(r.Segments, segment{Class: class, X: x0, W: math.Max(x1-x0, tlMinBar), Label: label})
		}
		// Waiting: from the earliest enqueue to the first claim (or to now,
		// or to the cancel).
		waitEnd := r.FirstClaim
		if waitEnd.IsZero() {
			waitEnd = r.Finished
		}
		if waitEnd.IsZero() && tl.Live {
			waitEnd = open
		}
		if !r.Enqueued.IsZero() && !waitEnd.IsZero() {
			add("waiting", r.Enqueued, waitEnd, "waiting "+short(waitEnd.Sub(r.Enqueued)))
		}
		if r.FirstClaim.IsZero() {
			if r.State == string(ledger.ItemCancelled) && !r.Finished.IsZero() {
				add("cancelled", r.Finished, r.Finished, "cancelled")
			}
			r.Title = rowTitle(*r)
			continue
		}
		if r.Attempt > 1 && r.LastClaim.After(r.FirstClaim) {
			add("retried", r.FirstClaim, r.LastClaim, fmt.Sprintf("attempts 1–%d", r.Attempt-1))
		}
		last := r.Finished
		if last.IsZero() && r.State == string(ledger.ItemFailed) {
			// FAILED is not terminal: its attempt ended when it was
			// recorded, and it waits for its retry since.
			last = it.UpdatedAt
		}
		if last.IsZero() {
			last = open
		}
		add(stateClass(r.State), r.LastClaim, last, fmt.Sprintf("attempt %d, %s", r.Attempt, short(last.Sub(r.LastClaim))))
		if r.State == string(ledger.ItemFailed) && tl.Live {
			add("waiting", last, open, "waiting for its retry")
		}
		r.Title = rowTitle(*r)
	}
	for i := range rows {
		r := &rows[i]
		r.MarkX = tlLabel + 4
		for _, sg := range r.Segments {
			r.MarkX = math.Max(r.MarkX, sg.X+sg.W+4)
		}
	}
	tl.Rows = rows
	tl.Height = tlAxis + float64(len(rows))*tlRow + 4
	tl.Ticks = axisTicks(tl)
	return tl
}

// x maps t to its position on the axis.
func (tl timeline) x(t time.Time) float64 {
	span := tl.End.Sub(tl.Start).Seconds()
	f := t.Sub(tl.Start).Seconds() / span
	return tlLabel + math.Max(0, math.Min(1, f))*(tl.Width-tlLabel-40)
}

// axisTicks are about six round offsets from the start.
func axisTicks(tl timeline) []timelineTick {
	span := tl.End.Sub(tl.Start)
	step := time.Millisecond
	for _, s := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
		20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute,
		2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour} {
		step = s
		if span/s <= 6 {
			break
		}
	}
	var ticks []timelineTick
	for d := time.Duration(0); d <= span && len(ticks) < 50; d += step {
		ticks = append(ticks, timelineTick{X: tl.x(tl.Start.Add(d)), Label: "+" + short(d)})
	}
	return ticks
}

func stateClass(state string) string {
	switch state {
	case string(ledger.ItemSucceeded):
		return "succeeded"
	case string(ledger.ItemRunning):
		return "running"
	case string(ledger.ItemFailed):
		return "failed"
	case string(ledger.ItemDead):
		return "dead"
	case string(ledger.ItemCancelled):
		return "cancelled"
	}
	return "pending"
}

func rowTitle(r timelineRow) string {
	s := fmt.Sprintf("%s: %s", r.Asset, r.State)
	if r.Attempt > 0 {
		s += fmt.Sprintf(", attempt %d", r.Attempt)
	}
	if r.Derived {
		s += fmt.Sprintf(", derived from %v", r.Inputs)
	}
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}

// short formats a duration for labels.
func short(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + short(-d)
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}
