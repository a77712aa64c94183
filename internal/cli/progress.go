package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress reports a backfill on stderr: a bar redrawn in place when the
// writer is a terminal, else a plain line at most every lineEvery (and at
// the end), so that logs stay readable.
type progress struct {
	mu         sync.Mutex
	w          io.Writer
	tty        bool
	ticks      int // ticks to run
	items      int // items those ticks hold
	start      time.Time
	lastLine   time.Time
	lineEvery  time.Duration
	ticksDone  int
	itemsDone  int
	drawnWidth int
}

// newProgress starts a report of ticks ticks holding items items.
func newProgress(w io.Writer, ticks, items int, now time.Time) *progress {
	return &progress{w: w, tty: isTerminal(w), ticks: ticks, items: items, start: now, lineEvery: time.Second}
}

// set records the counts at now and redraws when due.
func (p *progress) set(ticksDone, itemsDone int, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := ticksDone != p.ticksDone || itemsDone != p.itemsDone
	p.ticksDone, p.itemsDone = ticksDone, itemsDone
	switch {
	case p.tty:
		p.draw(now)
	case changed && now.Sub(p.lastLine) >= p.lineEvery:
		fmt.Fprintln(p.w, p.line(now))
		p.lastLine = now
	}
}

// done prints the final state on its own line.
func (p *progress) done(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		p.draw(now)
		fmt.Fprintln(p.w)
		return
	}
	fmt.Fprintln(p.w, p.line(now))
}

func (p *progress) draw(now time.Time) {
	const width = 24
	filled := 0
	if p.ticks > 0 {
		filled = width * p.ticksDone / p.ticks
	}
	bar := "[" + strings.Repeat("=", filled) + strings.Repeat(" ", width-filled) + "] "
	s := bar + p.line(now)
	pad := ""
	if n := p.drawnWidth - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprint(p.w, "\r"+s+pad)
	p.drawnWidth = len(s)
}

// line is the counts, the rate and the time left.
func (p *progress) line(now time.Time) string {
	elapsed := now.Sub(p.start)
	rate, eta := 0.0, "-"
	if elapsed > 0 && p.ticksDone > 0 {
		rate = float64(p.ticksDone) / elapsed.Seconds()
		left := time.Duration(float64(p.ticks-p.ticksDone) / rate * float64(time.Second))
		eta = ago(left)
	}
	return fmt.Sprintf("backfill: %d/%d ticks, %d/%d items, %.2f ticks/s, elapsed %s, ETA %s",
		p.ticksDone, p.ticks, p.itemsDone, p.items, rate, ago(elapsed), eta)
}

// limiter spaces events at least 1/rate apart.
type limiter struct {
	every time.Duration
	next  time.Time
}

func newLimiter(rate float64) *limiter {
	return &limiter{every: time.Duration(float64(time.Second) / rate)}
}

// delay returns how long to wait at now before the next event, and books
// that event.
func (l *limiter) delay(now time.Time) time.Duration {
	if l.next.Before(now) {
		l.next = now
	}
	d := l.next.Sub(now)
	l.next = l.next.Add(l.every)
	return d
}
